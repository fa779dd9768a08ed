extension JSONParser {
    /// Scans the string starting at the opening quote at `position`, checking escapes and
    /// UTF-8, and returns the range between the quotes with its flags. Eight bytes at a time:
    /// a word is searched for a quote, a backslash or a control byte in a few instructions.
    @inline(__always)
    mutating func scanString() throws(JSONSyntaxError) -> (start: Int, length: Int, flags: UInt8) {
        let start = position + 1
        var index = start
        var flags: UInt8 = 0
        var high: UInt64 = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let tops: UInt64 = 0x8080_8080_8080_8080
        while true {
            let word = UInt64(littleEndian: UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self))
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let stops =
                ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- ones &* 0x20) & ~word) & tops
            if stops == 0 {
                high |= word
                index += 8
                continue
            }
            // The lowest flagged byte is exact (borrows only disturb the bytes above it).
            let skipped = stops.trailingZeroBitCount >> 3
            high |= word & ((1 &<< UInt64(skipped &* 8)) &- 1)
            index += skipped
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                flags |= Token.escaped
                index = try validateEscape(at: index)
                continue
            }
            if index >= end { throw error("unterminated string", at: start - 1) }
            throw error("unescaped control character 0x\(String(byte, radix: 16)) in a string", at: index)
        }
        if high & tops != 0 {
            flags |= Token.nonASCII
            try validateUTF8(from: start, to: index)
        }
        position = index + 1
        return (start, index - start, flags)
    }

    /// Checks the escape at `index` (a backslash) and returns the index after it. A `\u`
    /// escape of a high surrogate must be followed by one of a low surrogate.
    private func validateEscape(at index: Int) throws(JSONSyntaxError) -> Int {
        guard index + 1 < end else { throw error("unterminated string", at: index) }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return index + 2
        case UInt8(ascii: "u"):
            guard let unit = hexUnit(at: index + 2) else { throw error("invalid \\u escape", at: index) }
            if unit & 0xFC00 == 0xDC00 { throw error("unpaired low surrogate in a \\u escape", at: index) }
            guard unit & 0xFC00 == 0xD800 else { return index + 6 }
            guard bytes[index + 6] == UInt8(ascii: "\\"), bytes[index + 7] == UInt8(ascii: "u"),
                let low = hexUnit(at: index + 8), low & 0xFC00 == 0xDC00
            else { throw error("unpaired high surrogate in a \\u escape", at: index) }
            return index + 12
        default:
            throw error("invalid escape sequence", at: index)
        }
    }

    /// The four hex digits at `index` as a UTF-16 code unit, or nil.
    func hexUnit(at index: Int) -> UInt16? {
        guard index + 4 <= end else { return nil }
        var unit: UInt16 = 0
        for offset in 0..<4 {
            guard let digit = HexDigits.value(bytes[index + offset]) else { return nil }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
    private func validateUTF8(from start: Int, to stop: Int) throws(JSONSyntaxError) {
        var index = start
        while index < stop {
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                upper = 0x9F
            case 0xF0:
                length = 4
                lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                upper = 0x8F
            default: throw error("invalid UTF-8 in a string", at: index)
            }
            guard index + length <= stop else { throw error("invalid UTF-8 in a string", at: index) }
            let second = bytes[index + 1]
            guard second >= lower, second <= upper else { throw error("invalid UTF-8 in a string", at: index) }
            for offset in 2..<max(length, 2) where bytes[index + offset] & 0xC0 != 0x80 {
                throw error("invalid UTF-8 in a string", at: index)
            }
            index += length
        }
    }
}

enum HexDigits {
    @inline(__always)
    static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
