import CZlib

/// zlib compression for the test server's encoded payloads.
public enum Compression {
    public enum Format: Sendable { case gzip, zlib, raw }

    /// Compresses `input` whole.
    public static func compress(_ input: [UInt8], format: Format, level: Int32 = 6) -> [UInt8] {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        let windowBits: Int32 =
            switch format {
            case .gzip: 15 + 16
            case .zlib: 15
            case .raw: -15
            }
        precondition(
            deflateInit2_(
                stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(input.count))) + 64)
        var input = input
        let produced = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.pointee.next_in = inBuffer.baseAddress
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress
                stream.pointee.avail_out = uInt(outBuffer.count)
                let status = deflate(stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate failed: \(status)")
                return outBuffer.count - Int(stream.pointee.avail_out)
            }
        }
        return Array(output[..<produced])
    }

    /// CRC-32 of `bytes`, continuing from `crc`.
    public static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return UInt32(CZlib.crc32(uLong(crc), base.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }

    /// CRC-32 of `bytes`.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0) }
    }
}
