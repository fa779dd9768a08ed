/// Turns a string token's bytes into a `String`, resolving escapes. The parser has already
/// checked the escapes and the UTF-8.
enum StringDecoding {
    static func string(_ bytes: UnsafePointer<UInt8>, start: Int, length: Int, flags: UInt8) -> String {
        let source = bytes + start
        guard flags & Token.escaped != 0 else {
            return String(decoding: UnsafeBufferPointer(start: source, count: length), as: UTF8.self)
        }
        // Every escape is at least as long as the UTF-8 it stands for.
        return String(unsafeUninitializedCapacity: length) { output in
            var read = 0
            var written = 0
            while read < length {
                let byte = source[read]
                guard byte == UInt8(ascii: "\\") else {
                    output[written] = byte
                    written += 1
                    read += 1
                    continue
                }
                let escape = source[read + 1]
                read += 2
                switch escape {
                case UInt8(ascii: "b"): output[written] = 0x08
                case UInt8(ascii: "f"): output[written] = 0x0C
                case UInt8(ascii: "n"): output[written] = 0x0A
                case UInt8(ascii: "r"): output[written] = 0x0D
                case UInt8(ascii: "t"): output[written] = 0x09
                case UInt8(ascii: "u"):
                    var scalar = UInt32(unit(source + read))
                    read += 4
                    if scalar & 0xFC00 == 0xD800 {
                        let low = UInt32(unit(source + read + 2))
                        read += 6
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    written += encode(scalar, into: output.baseAddress! + written)
                    continue
                default: output[written] = escape  // \" \\ \/
                }
                written += 1
            }
            return written
        }
    }

    /// Four hex digits (already validated) as a UTF-16 code unit.
    @inline(__always)
    private static func unit(_ digits: UnsafePointer<UInt8>) -> UInt16 {
        var unit: UInt16 = 0
        for offset in 0..<4 { unit = unit << 4 | UInt16(HexDigits.value(digits[offset]) ?? 0) }
        return unit
    }

    /// Writes `scalar` as UTF-8 and returns the byte count.
    private static func encode(_ scalar: UInt32, into output: UnsafeMutablePointer<UInt8>) -> Int {
        switch scalar {
        case ..<0x80:
            output[0] = UInt8(scalar)
            return 1
        case ..<0x800:
            output[0] = UInt8(0xC0 | scalar >> 6)
            output[1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case ..<0x10000:
            output[0] = UInt8(0xE0 | scalar >> 12)
            output[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            output[0] = UInt8(0xF0 | scalar >> 18)
            output[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            output[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }
}
