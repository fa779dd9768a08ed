import CBrotliEncoder
import CZlib
import CZstd

/// Compression for the test server's encoded payloads: zlib's formats, brotli and zstd.
public enum Compression {
    public enum Format: Sendable { case gzip, zlib, raw, brotli, zstd }

    /// Compresses `input` whole. `level` is zlib's (0-9); brotli and zstd use their defaults
    /// unless `level` is 9, which asks for their best.
    public static func compress(_ input: [UInt8], format: Format, level: Int32 = 6) -> [UInt8] {
        switch format {
        case .brotli: return brotli(input, quality: level == 9 ? 11 : 5)
        case .zstd: return zstd(input, level: level == 9 ? 19 : 3)
        case .gzip, .zlib, .raw: break
        }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        let windowBits: Int32 =
            switch format {
            case .gzip: 15 + 16
            case .zlib: 15
            case .raw: -15
            case .brotli, .zstd: preconditionFailure()
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

    /// One brotli stream of `input` (window 2^22, as `brotli` defaults to).
    public static func brotli(_ input: [UInt8], quality: Int32, window: Int32 = 22) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: BrotliEncoderMaxCompressedSize(input.count) + 64)
        var size = output.count
        let ok = input.withUnsafeBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                BrotliEncoderCompress(
                    quality, window, BROTLI_MODE_GENERIC, inBuffer.count, inBuffer.baseAddress, &size,
                    outBuffer.baseAddress)
            }
        }
        precondition(ok == BROTLI_TRUE, "brotli compression failed")
        return Array(output[..<size])
    }

    /// One zstd frame of `input`, with its content size in the header.
    public static func zstd(_ input: [UInt8], level: Int32) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count))
        let size = input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                ZSTD_compress(outBuffer.baseAddress, outBuffer.count, inBuffer.baseAddress, inBuffer.count, level)
            }
        }
        precondition(ZSTD_isError(size) == 0, "zstd compression failed")
        return Array(output[..<size])
    }

    /// A zstd frame whose header asks for a window of 2^`windowLog` bytes, holding `input`
    /// (level 3, long-distance matching so the window is used).
    public static func zstd(_ input: [UInt8], windowLog: Int32) -> [UInt8] {
        let context = ZSTD_createCCtx()
        defer { ZSTD_freeCCtx(context) }
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, windowLog)
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_enableLongDistanceMatching, 1)
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count))
        let size = input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                ZSTD_compress2(context, outBuffer.baseAddress, outBuffer.count, inBuffer.baseAddress, inBuffer.count)
            }
        }
        precondition(ZSTD_isError(size) == 0, "zstd compression failed")
        return Array(output[..<size])
    }

    /// One zstd frame of `input` as a streaming compressor writes it: no content size in the
    /// header (so a window descriptor), a block per 128 KiB, and a checksum after the last block.
    public static func zstdStreamed(_ input: [UInt8]) -> [UInt8] {
        let context = ZSTD_createCCtx()
        defer { ZSTD_freeCCtx(context) }
        _ = ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count) + 64)
        var written = 0
        input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBytes { outBuffer in
                var source = ZSTD_inBuffer(src: inBuffer.baseAddress, size: inBuffer.count, pos: 0)
                var target = ZSTD_outBuffer(dst: outBuffer.baseAddress, size: outBuffer.count, pos: 0)
                var remaining: Int
                repeat {
                    remaining = ZSTD_compressStream2(context, &target, &source, ZSTD_e_end)
                    precondition(ZSTD_isError(remaining) == 0, "zstd compression failed")
                } while remaining > 0
                written = target.pos
            }
        }
        return Array(output[..<written])
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
