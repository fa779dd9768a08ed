/// Percent-encoding (RFC 3986, section 2.1) for every layer: query items, paths, form bodies,
/// and the decoding of query items. The one implementation Courier uses, so that an `Endpoint`,
/// an API key in the query, a form body and a HAR recording agree byte for byte.
package enum PercentEncoding {
    /// RFC 3986's unreserved characters: `A-Z a-z 0-9 - . _ ~`. Everything else is encoded in a
    /// query name or value, so a space is `%20`, `+` is `%2B`, `&` is `%26` and `%` is `%25`.
    @inline(__always)
    package static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// What a path keeps as is: the unreserved characters, `/`, the sub-delimiters, `:` and `@`,
    /// and `%` (a path given already encoded stays as it is).
    @inline(__always)
    package static func isPathCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "%"), UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
            UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
            true
        default: isUnreserved(byte)
        }
    }

    /// Whether `byte` can never appear in a request target as is (a space, a control character
    /// or a non-ASCII byte): such a target must be percent-encoded before it is sent.
    @inline(__always)
    package static func mustBeEncodedInTarget(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte >= 0x7F
    }

    /// `text`'s UTF-8 bytes, those `keep` refuses written `%XX` (upper-case hex).
    package static func encode(_ text: String, keeping keep: (UInt8) -> Bool = isUnreserved) -> String {
        if text.utf8.allSatisfy(keep) { return text }  // the usual case: nothing to encode
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
            if keep(byte) { out.append(byte) } else { appendEscaped(byte, to: &out) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `byte` written `%XX` (upper-case hex).
    @inline(__always)
    private static func appendEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        out.append(UInt8(ascii: "%"))
        out.append(hex.utf8Start[Int(byte >> 4)])
        out.append(hex.utf8Start[Int(byte & 0xF)])
    }

    /// A set of ASCII bytes as two 64-bit masks (bit n of `low`: byte n; of `high`: byte
    /// 64 + n): a membership test is a shift and a mask, with no call per byte.
    package struct ByteSet: Sendable {
        package let low: UInt64
        package let high: UInt64

        /// The ASCII bytes `keeps` accepts (bytes of 128 and above are never in a set).
        init(_ keeps: (UInt8) -> Bool) {
            var low: UInt64 = 0
            var high: UInt64 = 0
            for byte in UInt8(0)..<64 where keeps(byte) { low |= 1 << byte }
            for byte in UInt8(64)..<128 where keeps(byte) { high |= 1 << (byte - 64) }
            (self.low, self.high) = (low, high)
        }

        @inline(__always)
        package func contains(_ byte: UInt8) -> Bool {
            byte < 64 ? (low &>> byte) & 1 == 1 : byte < 128 ? (high &>> (byte &- 64)) & 1 == 1 : false
        }

        /// ``isUnreserved(_:)`` as a set.
        package static let unreserved = ByteSet(isUnreserved)
        /// ``isPathCharacter(_:)`` as a set.
        package static let path = ByteSet(isPathCharacter)
    }

    /// Appends `bytes` to `out`, those outside `keep` written `%XX` (upper-case hex): how a
    /// request target is built in one buffer. Bytes that need nothing are copied at once.
    @inline(__always)
    package static func append(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8], keeping keep: ByteSet) {
        var first = 0
        while first < bytes.count, keep.contains(bytes[first]) { first += 1 }
        if first == bytes.count {  // the usual case: nothing to encode
            out.append(contentsOf: bytes)
            return
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<first]))
        for byte in bytes[first...] {
            if keep.contains(byte) { out.append(byte) } else { appendEscaped(byte, to: &out) }
        }
    }

    /// A query name or value: everything but the unreserved characters encoded.
    package static func encodeQueryComponent(_ text: String) -> String { encode(text) }

    /// A path: what cannot appear in one encoded; `/`, sub-delimiters and `%XX` escapes kept.
    package static func encodePath(_ path: String) -> String { encode(path, keeping: isPathCharacter) }

    /// A name or value of an `application/x-www-form-urlencoded` body, as HTML forms encode it:
    /// a space becomes `+`, a literal `+` becomes `%2B`.
    package static func encodeFormComponent(_ text: String) -> String {
        encode(text, keeping: { isUnreserved($0) || $0 == UInt8(ascii: " ") }).replacing(" ", with: "+")
    }

    /// `text` with its `%XX` escapes decoded; `+` decodes to a space only when `plusIsSpace`
    /// (form bodies), and stays `+` otherwise (query strings, RFC 3986). Lenient, never failing:
    /// a `%` not followed by two hex digits stays as written, and bytes that are not UTF-8
    /// become U+FFFD.
    package static func decode(_ text: some StringProtocol, plusIsSpace: Bool = false) -> String {
        let input = Array(text.utf8)
        guard input.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%"), index + 2 < input.count,
                let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
                continue
            }
            bytes.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The value of one hex digit (either case), or nil.
    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
