import FoundationEssentials

/// Foundation's snake_case to camelCase key conversion: `user_name` becomes `userName`; the
/// first word is lowercased and the others capitalized; leading and trailing underscores stay;
/// a key without inner underscores is left alone.
enum SnakeCase {
    /// The converted key, for keys the byte shortcut does not handle.
    static func convert(_ key: String) -> String {
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first, key[last] == "_" { key.formIndex(before: &last) }
        let words = key[first...last].split(separator: "_")
        guard words.count > 1 else { return key }
        var converted = String(key[..<first])
        converted += words[0].lowercased()
        for word in words.dropFirst() { converted += word.capitalized }
        converted += key[key.index(after: last)...]
        return converted
    }

    /// Whether the converted `key` equals `target`, worked out on the bytes without building
    /// the converted key; nil when the key holds a character this shortcut does not convert
    /// exactly as Foundation does (anything but ASCII letters, digits and underscores).
    @inline(__always)
    static func matches(_ key: UnsafePointer<UInt8>, length: Int, target: UnsafeBufferPointer<UInt8>) -> Bool? {
        var start = 0
        while start < length, key[start] == UInt8(ascii: "_") { start += 1 }
        var stop = length
        while stop > start, key[stop - 1] == UInt8(ascii: "_") { stop -= 1 }
        var inner = start
        while inner < stop, key[inner] != UInt8(ascii: "_") { inner += 1 }
        if inner == stop {
            // No inner underscore: the key as written.
            guard length == target.count else { return false }
            for offset in 0..<length where key[offset] != target[offset] { return false }
            return true
        }
        var written = 0
        @inline(__always) func emit(_ byte: UInt8) -> Bool {
            guard written < target.count, target[written] == byte else { return false }
            written += 1
            return true
        }
        for _ in 0..<start where !emit(UInt8(ascii: "_")) { return false }
        var index = start
        var word = 0
        while index < stop {
            if key[index] == UInt8(ascii: "_") {
                index += 1
                continue
            }
            var first = true
            var afterDigit = false
            while index < stop, key[index] != UInt8(ascii: "_") {
                let byte = key[index]
                let isLetter = (byte | 0x20) &- UInt8(ascii: "a") < 26
                let isDigit = byte &- UInt8(ascii: "0") < 10
                guard isLetter || isDigit else { return nil }
                var converted = byte
                if isLetter {
                    // The first word lowercased; in the others a letter starting the word or
                    // following a digit is uppercased (`capitalized`), the rest lowercased.
                    converted = word > 0 && (first || afterDigit) ? byte & ~0x20 : byte | 0x20
                }
                guard emit(converted) else { return false }
                first = false
                afterDigit = isDigit
                index += 1
            }
            word += 1
        }
        for _ in stop..<length where !emit(UInt8(ascii: "_")) { return false }
        return written == target.count
    }
}
