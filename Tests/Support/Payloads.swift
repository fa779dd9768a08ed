/// Deterministic bodies the server sends and tests check against.
public enum Payloads {
    /// A small JSON object.
    public static let smallJSON = Array(#"{"id":7,"name":"Ada Lovelace","email":"ada@example.com","active":true}"#.utf8)

    /// `count` bytes of JSON-like text that compresses realistically and never repeats
    /// with a short period (so a shifted or truncated copy is detected).
    public static func text(count: Int) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 64)
        var index = 0
        while bytes.count < count {
            bytes.append(contentsOf: #"{"id":\#(index),"name":"user-\#(index &* 2654435761 % 100_000)","score":\#(index % 997)},"#.utf8)
            index += 1
        }
        return Array(bytes[..<count])
    }

    /// Byte `index` of the binary pattern served by `/bytes`.
    @inline(__always)
    public static func patternByte(at index: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: index &* 31 &+ (index >> 11))
    }

    /// Fills `buffer` with the pattern starting at `offset`.
    public static func fillPattern(_ buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        for i in 0..<buffer.count { buffer[i] = patternByte(at: offset + i) }
    }

    /// CRC-32 of the first `count` pattern bytes.
    public static func patternCRC(count: Int) -> UInt32 {
        var crc: UInt32 = 0
        var offset = 0
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 8)
        defer { chunk.deallocate() }
        while offset < count {
            let n = min(chunk.count, count - offset)
            let slice = UnsafeMutableRawBufferPointer(rebasing: chunk[..<n])
            fillPattern(slice, offset: offset)
            crc = Compression.crc32(UnsafeRawBufferPointer(slice), continuing: crc)
            offset += n
        }
        return crc
    }
}
