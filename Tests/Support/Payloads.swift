public import Foundation

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
            bytes.append(
                contentsOf:
                    #"{"id":\#(index),"name":"user-\#(index &* 2_654_435_761 % 100_000)","score":\#(index % 997)},"#
                    .utf8)
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
    ///
    /// A `while` over a raw pointer, and whole-buffer comparisons below, never a generic loop per
    /// byte (`(0..<n).map`, `elementsEqual`): unspecialized in a debug build, those look up
    /// generic metadata behind a runtime lock on every byte, and under ThreadSanitizer, with
    /// hundreds of test threads, megabytes of them held both cooperative threads for a minute.
    public static func fillPattern(_ buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        guard let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var index = 0
        while index < buffer.count {
            base[index] = patternByte(at: offset &+ index)
            index &+= 1
        }
    }

    /// The pattern bytes at `range`, as `/bytes` serves them.
    public static func pattern(_ range: Range<Int>) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: range.count)
        bytes.withUnsafeMutableBytes { fillPattern($0, offset: range.lowerBound) }
        return bytes
    }

    /// Whether `bytes` are the pattern from `offset` on, compared as whole buffers.
    public static func isPattern(_ bytes: some ContiguousBytes, from offset: Int = 0) -> Bool {
        bytes.withUnsafeBytes { received in
            let expected = pattern(offset..<offset + received.count)
            guard let receivedBase = received.baseAddress else { return true }  // nothing to compare
            return expected.withUnsafeBytes { memcmp($0.baseAddress!, receivedBase, received.count) == 0 }
        }
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
