import FoundationEssentials

/// Finding a key in an object.
///
/// Models usually ask for their keys in the order the server wrote them, so each object's
/// token remembers where its last match ended and the next lookup starts there: decoding a
/// record costs one comparison per field. When the parser saw that two keys of the object may
/// be the same, lookups scan from the start instead, so the first of them wins, as in
/// Foundation.
extension DecodingState {
    /// The token of the value for `name` in `object`, or nil.
    @inline(__always)
    func value(in object: Int, forKey name: String, verbatim: Bool, path: CodingPathNode?) -> Int? {
        let objectToken = tokens[object]
        guard objectToken.length > 0 else { return nil }
        var name = name
        return name.withUTF8 { target in
            let first = object + 1
            let end = Int(objectToken.next)
            // Only needed when bytes differ, which in-order lookups rarely see.
            var plainTarget: Bool? = nil
            if objectToken.has(Token.mayRepeatKeys) {
                var key = first
                while key < end {
                    if keyMatches(key, target: target, plainTarget: &plainTarget, verbatim: verbatim, path: path) {
                        return key + 1
                    }
                    key = Int(tokens[key + 1].next)
                }
                return nil
            }
            let start = Int(objectToken.offset)
            var key = start
            while key < end {
                if keyMatches(key, target: target, plainTarget: &plainTarget, verbatim: verbatim, path: path) {
                    return found(key, in: object, end: end)
                }
                key = Int(tokens[key + 1].next)
            }
            key = first
            while key < start {
                if keyMatches(key, target: target, plainTarget: &plainTarget, verbatim: verbatim, path: path) {
                    return found(key, in: object, end: end)
                }
                key = Int(tokens[key + 1].next)
            }
            return nil
        }
    }

    /// Records where the next lookup in `object` starts, and returns the value's token.
    @inline(__always)
    private func found(_ key: Int, in object: Int, end: Int) -> Int {
        let next = Int(tokens[key + 1].next)
        tokens[object].offset = UInt32(truncatingIfNeeded: next < end ? next : object + 1)
        return key + 1
    }

    private func isPlainASCII(_ bytes: UnsafeBufferPointer<UInt8>, remember: inout Bool?) -> Bool {
        var bits: UInt8 = 0
        for byte in bytes { bits |= byte }
        remember = bits < 0x80
        return bits < 0x80
    }

    @inline(__always)
    private func keyMatches(
        _ key: Int, target: UnsafeBufferPointer<UInt8>, plainTarget: inout Bool?, verbatim: Bool, path: CodingPathNode?
    ) -> Bool {
        let token = tokens[key]
        let mode = verbatim ? .useDefaultKeys : options.keyDecodingStrategy.mode
        switch mode {
        case .useDefaultKeys:
            // Equal bytes are equal keys. Otherwise plain ASCII on both sides differs, and
            // anything else compares as `String`s (canonical equivalence), as Foundation's
            // dictionary lookup does.
            if token.flags == 0 {
                if equal(token, target) { return true }
                if plainTarget ?? isPlainASCII(target, remember: &plainTarget) { return false }
            }
            return keyString(key) == String(decoding: target, as: UTF8.self)
        case .convertFromSnakeCase:
            if token.flags == 0, plainTarget ?? isPlainASCII(target, remember: &plainTarget),
                let matches = SnakeCase.matches(bytes + Int(token.offset), length: Int(token.length), target: target)
            {
                return matches
            }
            return convertedKey(key, path: path) == String(decoding: target, as: UTF8.self)
        case .custom:
            return convertedKey(key, path: path) == String(decoding: target, as: UTF8.self)
        }
    }

    @inline(__always)
    private func equal(_ token: Token, _ target: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = Int(token.length)
        guard count == target.count else { return false }
        let key = bytes + Int(token.offset)
        for offset in 0..<count where key[offset] != target[offset] { return false }
        return true
    }

    /// A key as written.
    func keyString(_ key: Int) -> String {
        let token = tokens[key]
        return StringDecoding.string(bytes, start: Int(token.offset), length: Int(token.length), flags: token.flags)
    }

    /// A key after the key strategy (the slow way, remembered per key token). `path` is the
    /// coding path of the object, which custom strategies receive.
    func convertedKey(_ key: Int, path: CodingPathNode?) -> String {
        if let known = convertedKeys[key] { return known }
        let written = keyString(key)
        let converted: String
        switch options.keyDecodingStrategy.mode {
        case .useDefaultKeys: converted = written
        case .convertFromSnakeCase: converted = SnakeCase.convert(written)
        case .custom(let convert):
            converted = convert(path.appending(JSONKey(stringValue: written))).stringValue
        }
        convertedKeys[key] = converted
        return converted
    }

    /// The object's keys after the key strategy, in document order, the first of repeated
    /// keys only.
    func keys(of object: Int, verbatim: Bool, path: CodingPathNode?) -> [String] {
        let objectToken = tokens[object]
        var names: [String] = []
        names.reserveCapacity(Int(objectToken.length))
        var key = object + 1
        let end = Int(objectToken.next)
        while key < end {
            let converts = !verbatim && options.keyDecodingStrategy.convertsKeys
            names.append(converts ? convertedKey(key, path: path) : keyString(key))
            key = Int(tokens[key + 1].next)
        }
        guard objectToken.has(Token.mayRepeatKeys) else { return names }
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }
}
