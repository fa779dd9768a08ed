/// A validating one-pass JSON parser that writes the token tape.
///
/// It checks the whole grammar of RFC 8259 (strings, escapes and surrogate pairs, UTF-8,
/// numbers, nesting up to ``maximumDepth``) but converts nothing: strings stay as byte ranges
/// and numbers as text until a model reads them. While `emitting` is false it validates
/// without writing tokens (the parts of a document outside a key path).
///
/// `bytes` must be followed by at least ``padding`` zero bytes: scans read ahead in 8-byte
/// words, and the zeros end every scan at the end of the input.
struct JSONParser: ~Copyable {
    static let maximumDepth = 512
    static let padding = 16

    let bytes: UnsafePointer<UInt8>
    let end: Int
    var position = 0
    var tokens: TokenBuffer
    var emitting = true
    let keys: KeyComparison

    /// How keys are compared later, which decides when two keys count as the same.
    enum KeyComparison {
        /// Byte for byte (the default key strategy).
        case exact
        /// After snake_case conversion: compared ignoring `_` and ASCII case.
        case snakeCase
        /// By a user's function: any two keys may be the same.
        case opaque
    }

    init(bytes: UnsafePointer<UInt8>, count: Int, keys: KeyComparison) {
        self.bytes = bytes
        end = count
        self.keys = keys
        tokens = TokenBuffer(capacity: count / 8 + 16)
    }

    /// Parses a whole document: one value, with only whitespace around it (and an optional
    /// UTF-8 byte order mark before it).
    mutating func parseDocument() throws(JSONSyntaxError) {
        skipByteOrderMark()
        skipWhitespace()
        try parseValue(depth: 0)
        try expectEnd()
    }

    mutating func skipByteOrderMark() {
        if end >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        guard position == end else { throw error("unexpected data after the top-level value") }
    }

    func error(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(reason, at: offset ?? position, in: bytes, count: end)
    }

    func unexpected(_ expectation: String) -> JSONSyntaxError {
        guard position < end else { return error("unexpected end of data, \(expectation)") }
        let byte = bytes[position]
        let shown =
            byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        return error("unexpected \(shown), \(expectation)")
    }

    @inline(__always)
    mutating func skipWhitespace() {
        // The zero padding after the input is not whitespace, so this stops at the end.
        while true {
            let byte = bytes[position]
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            position += 1
        }
    }

    mutating func parseValue(depth: Int) throws(JSONSyntaxError) {
        switch bytes[position] {
        case UInt8(ascii: "\""):
            let string = try scanString()
            if emitting { _ = tokens.append(.string, offset: string.start, length: string.length, flags: string.flags) }
        case UInt8(ascii: "{"):
            try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            try parseArray(depth: depth + 1)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try parseNumber()
        case UInt8(ascii: "t"):
            try parseLiteral("true", word: 0x6575_7274, kind: .true)
        case UInt8(ascii: "f"):
            // "fals" then "e".
            try parseLiteral("false", word: 0x736C_6166, kind: .false)
            guard bytes[position] == UInt8(ascii: "e") else { throw unexpected("expected 'false'") }
            position += 1
        case UInt8(ascii: "n"):
            try parseLiteral("null", word: 0x6C6C_756E, kind: .null)
        default:
            throw unexpected("expected a value")
        }
    }

    @inline(__always)
    private mutating func parseLiteral(_ name: String, word: UInt32, kind: Token.Kind) throws(JSONSyntaxError) {
        let loaded = UnsafeRawPointer(bytes + position).loadUnaligned(as: UInt32.self)
        guard UInt32(littleEndian: loaded) == word else { throw unexpected("expected '\(name)'") }
        if emitting { _ = tokens.append(kind, offset: position) }
        position += 4
    }

    private mutating func parseNumber() throws(JSONSyntaxError) {
        let start = position
        var index = position
        var flags: UInt8 = 0
        @inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while isDigit(bytes[index]) { index += 1 }
        } else {
            position = index
            throw unexpected("expected a digit")
        }
        if bytes[index] == UInt8(ascii: ".") {
            flags |= Token.fractional
            index += 1
            guard isDigit(bytes[index]) else {
                position = index
                throw unexpected("expected a digit after the decimal point")
            }
            while isDigit(bytes[index]) { index += 1 }
        }
        if bytes[index] | 0x20 == UInt8(ascii: "e") {
            flags |= Token.fractional
            index += 1
            if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(bytes[index]) else {
                position = index
                throw unexpected("expected a digit in the exponent")
            }
            while isDigit(bytes[index]) { index += 1 }
        }
        position = index
        if emitting { _ = tokens.append(.number, offset: start, length: index - start, flags: flags) }
    }

    /// A member's key string and the colon after it (with the whitespace around).
    @inline(__always)
    mutating func parseKey() throws(JSONSyntaxError) -> (start: Int, length: Int, flags: UInt8) {
        guard bytes[position] == UInt8(ascii: "\"") else { throw unexpected("expected a key string") }
        let key = try scanString()
        skipWhitespace()
        guard bytes[position] == UInt8(ascii: ":") else { throw unexpected("expected ':' after a key") }
        position += 1
        skipWhitespace()
        return key
    }

    /// After a member or element: skips a comma and the whitespace after it (false), or the
    /// closing bracket (true).
    @inline(__always)
    mutating func atClosing(_ closing: UInt8, of container: String) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        let byte = bytes[position]
        if byte == UInt8(ascii: ",") {
            position += 1
            skipWhitespace()
            return false
        }
        guard byte == closing else {
            throw unexpected("expected ',' or '\(Character(Unicode.Scalar(closing)))' in \(container)")
        }
        position += 1
        return true
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        let index = emitting ? tokens.append(.array, offset: position) : 0
        position += 1
        skipWhitespace()
        var elements = 0
        if bytes[position] == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                try parseValue(depth: depth)
                elements += 1
                if try atClosing(UInt8(ascii: "]"), of: "an array") { break }
            }
        }
        if emitting { tokens.close(index, count: elements, flags: 0) }
    }

    mutating func parseObject(depth: Int) throws(JSONSyntaxError) {
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        let index = emitting ? tokens.append(.object, offset: position) : 0
        position += 1
        skipWhitespace()
        var members = 0
        var duplicates = KeyDuplicates()
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                let key = try parseKey()
                if emitting {
                    _ = tokens.append(.string, offset: key.start, length: key.length, flags: key.flags)
                    duplicates.add(key, bytes: bytes, comparison: keys)
                }
                try parseValue(depth: depth)
                members += 1
                if try atClosing(UInt8(ascii: "}"), of: "an object") { break }
            }
        }
        if emitting {
            tokens.close(index, count: members, flags: duplicates.mayRepeat ? Token.mayRepeatKeys : 0)
        }
    }
}

/// Whether an object may hold the same key twice, found from 64-bit fingerprints of its keys
/// (normalised as the key strategy compares them). A fingerprint collision only costs the
/// object its in-order lookups, never a wrong match. The first 16 fingerprints live inline
/// (no allocation for typical objects); larger objects use a set.
struct KeyDuplicates {
    var mayRepeat = false
    private var inline:
        (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
        ) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    private var large: Set<UInt64>? = nil
    private var keys = 0
    private var unusual = false

    @inline(__always)
    mutating func add(
        _ key: (start: Int, length: Int, flags: UInt8), bytes: UnsafePointer<UInt8>,
        comparison: JSONParser.KeyComparison
    ) {
        guard !mayRepeat else { return }
        keys += 1
        if key.flags != 0 || comparison == .opaque {
            // Escapes, non-ASCII text (canonical equivalence) or a custom strategy: this key
            // may equal any other.
            unusual = true
        }
        if unusual {
            mayRepeat = keys > 1
            return
        }
        let hash = Self.fingerprint(key, bytes: bytes, comparison: comparison)
        if keys <= 16 {
            mayRepeat = withUnsafeMutableBytes(of: &inline) { raw in
                let stored = raw.bindMemory(to: UInt64.self)
                for index in 0..<(keys - 1) where stored[index] == hash { return true }
                stored[keys - 1] = hash
                return false
            }
            return
        }
        if large == nil {
            large = withUnsafeBytes(of: &inline) { Set($0.bindMemory(to: UInt64.self)) }
        }
        if !large!.insert(hash).inserted { mayRepeat = true }
    }

    @inline(__always)
    private static func fingerprint(
        _ key: (start: Int, length: Int, flags: UInt8), bytes: UnsafePointer<UInt8>,
        comparison: JSONParser.KeyComparison
    ) -> UInt64 {
        let start = bytes + key.start
        if comparison == .snakeCase {
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for offset in 0..<key.length {
                var byte = start[offset]
                if byte == UInt8(ascii: "_") { continue }
                if byte &- UInt8(ascii: "A") < 26 { byte |= 0x20 }
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
            }
            return hash
        }
        // The first and last eight bytes and the length: exact for keys up to 16 bytes, a
        // fingerprint beyond. (Reading past a short key stays inside the document or its
        // padding.)
        let raw = UnsafeRawPointer(start)
        var first = raw.loadUnaligned(as: UInt64.self)
        if key.length < 8 { first &= (1 &<< UInt64(key.length &* 8)) &- 1 }
        let last = key.length > 8 ? raw.loadUnaligned(fromByteOffset: key.length - 8, as: UInt64.self) : 0
        let mixed = last &* 0xC2B2_AE3D_27D4_EB4F
        return (first &* 0x9E37_79B9_7F4A_7C15) ^ (mixed &>> 7 | mixed &<< 57) ^ UInt64(key.length)
    }
}
