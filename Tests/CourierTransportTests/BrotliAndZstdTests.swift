import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// The brotli (`br`) and zstd content codings, decoded by Courier's own streaming decoders
/// under the rules gzip follows: byte-exact bodies sent whole or streamed, the decoded-size
/// cap, and a typed error for every way a stream can go wrong.
@Suite struct BrotliAndZstdTests {
    @Test(arguments: ["br", "zstd"], [0, 1, 1_000, 100_000, 3_000_000])
    func bodiesDecodeByteExact(coding: String, size: Int) async throws {
        try await withLoopback { server, transport in
            let request = server.request("/stacked?codings=\(coding)&n=\(size)")
            let response = try await transport.send(request)
            #expect(Array(response.body) == Payloads.text(count: size))
            #expect(response.head.headerFields[.contentEncoding] == nil)
            #expect(response.metrics.decodedContentEncoding == coding)
            let streamed = try await transport.stream(request)
            #expect(streamed.metrics.decodedContentEncoding == coding)
            #expect(Array(try await streamed.body.collect()) == Payloads.text(count: size))
        }
    }

    /// Corrupt, cut short, or followed by garbage: `decompressionFailed`, sent whole or
    /// streamed, for each coding (gzip as the reference).
    @Test(arguments: ["gzip", "br", "zstd"], ["corrupt", "truncated", "trailing"])
    func aBrokenStreamIsADecompressionError(coding: String, fault: String) async throws {
        try await withLoopback { server, transport in
            let request = server.request("/coded-fault?coding=\(coding)&fault=\(fault)")
            let sent = await serviceError { _ = try await transport.send(request) }
            #expect(sent?.code == .decompressionFailed, "\(sent.map { "\($0)" } ?? "")")
            let streamed = await serviceError { _ = try await transport.stream(request).body.collect() }
            #expect(streamed?.code == .decompressionFailed)
        }
    }

    @Test(arguments: ["gzip", "br", "zstd"])
    func aBombStopsAtTheDecodedLimit(coding: String) async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = 1 << 20
            let request = server.request("/coded-fault?coding=\(coding)&fault=bomb&mb=32")
            let sent = await serviceError { _ = try await transport.send(request, body: nil, options: options) }
            #expect(sent?.code == .responseTooLarge)
            let streamed = await serviceError {
                _ = try await transport.stream(request, body: nil, options: options).body.collect()
            }
            #expect(streamed?.code == .responseTooLarge)
        }
    }

    /// A zstd frame may ask for any window; the decoder holds that much memory, so frames over
    /// HTTP's 8 MiB (RFC 9659) are refused rather than decoded.
    @Test func aZstdFrameNeedingAWindowOver8MiBIsRefused() async throws {
        try await withLoopback { server, transport in
            let request = server.request("/coded-fault?coding=zstd&fault=wide-window")
            let error = await serviceError { _ = try await transport.send(request) }
            #expect(error?.code == .decompressionFailed)
            #expect(error?.message.contains("window") == true)
        }
    }

    // MARK: The decoders alone

    static func compressed(_ coding: ContentEncoding, _ input: [UInt8]) -> [UInt8] {
        Compression.compress(input, format: coding == .brotli ? .brotli : .zstd)
    }

    @Test(arguments: [ContentEncoding.brotli, .zstd])
    func streamingMatchesOneShotForAnyChunking(coding: ContentEncoding) throws {
        let original = Payloads.text(count: 300_000)
        let compressed = Self.compressed(coding, original)
        let whole = try compressed.withUnsafeBytes { try coding.makeDecoder().decodeAll($0, limit: nil) }
        #expect(Array(whole) == original)
        for chunkSize in [1, 7, 1_000, 65_536] {
            let decoder = coding.makeDecoder()
            let output = try Self.decodeInChunks(decoder, compressed, chunkSize: chunkSize)
            #expect(output == original, "\(coding), chunk size \(chunkSize)")
            #expect(decoder.totalOut == original.count)
        }
    }

    @Test(arguments: [ContentEncoding.brotli, .zstd])
    func aStreamThatStopsEarlyFailsAtFinish(coding: ContentEncoding) throws {
        let compressed = Self.compressed(coding, Payloads.text(count: 100_000))
        for cut in [1, compressed.count / 2, compressed.count - 1] {
            let decoder = coding.makeDecoder()
            try compressed.prefix(cut).withUnsafeBytes { bytes in try decoder.decode(bytes, limit: nil) { _ in } }
            #expect(throws: ServiceError.self, "\(coding) cut at \(cut)") { try decoder.finish() }
            let whole = compressed.prefix(cut)
            #expect(throws: ServiceError.self) {
                _ = try whole.withUnsafeBytes { try coding.makeDecoder().decodeAll($0, limit: nil) }
            }
        }
    }

    /// A frame that declares 91 bytes and holds none (found by fuzzing: libzstd 1.5.4 refuses
    /// it whole but accepts it byte by byte) is corrupt however it arrives.
    @Test func aZstdFrameShorterThanItsDeclaredSizeIsCorruptInAnyChunking() throws {
        try Self.expectCorruptInAnyChunking([0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x5B, 0x01, 0x00, 0x00])
        let sized = Compression.zstd(Payloads.text(count: 5_000), level: 3)
        for chunkSize in [1, 3, sized.count] {
            let output = try Self.decodeInChunks(ZstdDecoder(), sized, chunkSize: chunkSize)
            #expect(output == Payloads.text(count: 5_000), "a frame of its declared size, chunks of \(chunkSize)")
        }
    }

    /// A frame of zstd 0.5's legacy format (libzstd decodes it whole, but not in pieces; found
    /// by fuzzing) is no HTTP content coding.
    @Test func aLegacyZstdFrameIsRefusedInAnyChunking() throws {
        try Self.expectCorruptInAnyChunking([0x25, 0xB5, 0x2F, 0xFD, 0x0A, 0xFF, 0xFF, 0xFF])
    }

    /// `bytes` fed to `decoder` in pieces of `chunkSize`, then `finish()`: what came out.
    static func decodeInChunks(_ decoder: any ContentDecoder, _ bytes: [UInt8], chunkSize: Int) throws -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunkSize, bytes.count)
            try bytes[offset..<end].withUnsafeBytes { piece in
                try decoder.decode(piece, limit: nil) { output.append(contentsOf: $0) }
            }
            offset = end
        }
        try decoder.finish()
        return output
    }

    static func expectCorruptInAnyChunking(_ frame: [UInt8]) throws {
        for chunkSize in [1, 2, 3, 5, 7, 14, 15, 64, frame.count] {
            var failure: ServiceError?
            do {
                _ = try decodeInChunks(ZstdDecoder(), frame, chunkSize: chunkSize)
            } catch {
                failure = error as? ServiceError
            }
            #expect(failure?.code == .decompressionFailed, "chunk size \(chunkSize)")
        }
        let whole = try? frame.withUnsafeBytes { try ZstdDecoder().decodeAll($0, limit: nil) }
        #expect(whole == nil)
    }

    /// A frame that ends exactly where the output space does (16 KiB: `decodeAll`'s first
    /// buffer; 64 KiB: the streaming scratch) is complete, not truncated.
    @Test(arguments: [ContentEncoding.brotli, .zstd], [16_384, 65_536, 131_072])
    func aStreamEndingExactlyAtTheOutputSpaceIsComplete(coding: ContentEncoding, size: Int) throws {
        let original = [UInt8](repeating: 0, count: size)
        let compressed = Self.compressed(coding, original)
        let whole = try compressed.withUnsafeBytes { try coding.makeDecoder().decodeAll($0, limit: nil) }
        #expect(Array(whole) == original)
        for chunkSize in [1, compressed.count] {
            #expect(try Self.decodeInChunks(coding.makeDecoder(), compressed, chunkSize: chunkSize) == original)
        }
    }

    /// A frame declaring a 1 GiB window around 256 raw bytes, with its content size: libzstd
    /// decodes it in one pass without checking the window, and refuses it in pieces. Courier
    /// reads the window itself and refuses it either way.
    @Test func aWideWindowIsRefusedWholeAndInPieces() throws {
        let header: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x40, 20 << 3, 0x00, 0x00]
        let block: [UInt8] = [0x01, 0x08, 0x00] + [UInt8](repeating: 0x61, count: 256)
        try Self.expectCorruptInAnyChunking(header + block)
        var narrow = header + block
        narrow[5] = 10 << 3  // 1 MiB: accepted
        #expect(try Self.decodeInChunks(ZstdDecoder(), narrow, chunkSize: narrow.count).count == 256)
        #expect(try narrow.withUnsafeBytes { try ZstdDecoder().decodeAll($0, limit: nil) }.count == 256)
    }

    /// An empty frame, then one whose only block is compressed and of size 0 (found by
    /// fuzzing: libzstd 1.5.4 takes it for an empty block in pieces, and as corrupt in one pass).
    @Test func anEmptyCompressedBlockIsCorruptInAnyChunking() throws {
        let empty: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x01, 0x00, 0x00]
        try Self.expectCorruptInAnyChunking(empty + [0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x05, 0x00, 0x00])
        #expect(try Self.decodeInChunks(ZstdDecoder(), empty, chunkSize: 1).isEmpty)
    }

    /// A block may not be wider than its frame's window (RFC 8878, `Block_Maximum_Size`): a
    /// 2,048-byte raw block in a frame with a 1 KiB window and a declared size of 2,048; an RLE
    /// block (one byte held) in a frame whose window is its declared size, 0. libzstd 1.5.4
    /// accepts each in one pass and refuses it in pieces (the second found by fuzzing).
    @Test func aBlockWiderThanTheWindowIsCorruptInAnyChunking() throws {
        let header: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x40, 0x00, 0x00, 0x07]
        let block: [UInt8] = [0x01, 0x40, 0x00] + [UInt8](repeating: 0x61, count: 2_048)
        try Self.expectCorruptInAnyChunking(header + block)
        try Self.expectCorruptInAnyChunking([0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x03, 0x00, 0x00, 0x2F])
    }

    /// A compressed block that decodes to more than its frame's window (1 KiB; the frame
    /// declares 2,000 bytes). libzstd 1.5.4 checks a block's decoded size against the window only
    /// block by block: in one pass it accepted this frame (found in review, confirmed in C).
    @Test func aBlockDecodingToMoreThanTheWindowIsCorruptInAnyChunking() throws {
        try Self.expectCorruptInAnyChunking([
            0x28, 0xB5, 0x2F, 0xFD, 0x40, 0x00, 0xD0, 0x06, 0x25, 0x00, 0x00, 0x05, 0x7D, 0x61, 0x00,
        ])
    }

    /// A frame header split across two chunks, after a skippable frame. libzstd 1.5.4, on
    /// completing a header, looks for the whole frame from where the call's input starts, not
    /// where the header did: in chunks of 64 it decoded a "frame" starting inside this one's
    /// header and produced 12,469 bytes of it; whole or byte by byte, the frame is corrupt (found
    /// in review, confirmed in C).
    @Test func aFrameHeaderSplitAcrossChunksIsReadWhereItStarts() throws {
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 0x33, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 51)
        // Magic, descriptor, window, content size (12,469), a 31-byte compressed block's header.
        let header: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x40, 0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00]
        let frame = header + [0xEA, 0x84, 0x01, 0x61, 0xC1, 0x00, 0x00] + [UInt8](repeating: 0x42, count: 24)
        try Self.expectCorruptInAnyChunking(skippable + frame)
        // A valid frame split the same way decodes.
        let text = Payloads.text(count: 20_000)
        let valid = skippable + Compression.zstd(text, level: 3)
        for chunkSize in [1, 61, 62, 64, valid.count] {
            #expect(
                try Self.decodeInChunks(ZstdDecoder(), valid, chunkSize: chunkSize) == text, "chunks of \(chunkSize)")
        }
    }

    /// What a streaming compressor writes (no content size, a window descriptor, several
    /// blocks, a checksum), with skippable frames before and between, decodes in any chunking.
    @Test func checksummedFramesAndSkippableFramesDecodeInAnyChunking() throws {
        let first = Payloads.text(count: 300_000)
        let second = Array("second frame".utf8)
        let skippable: [UInt8] = [0x5A, 0x2A, 0x4D, 0x18, 0x03, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03]
        let body = skippable + Compression.zstdStreamed(first) + skippable + Compression.zstdStreamed(second)
        for chunkSize in [1, 7, 4_096, body.count] {
            #expect(try Self.decodeInChunks(ZstdDecoder(), body, chunkSize: chunkSize) == first + second)
        }
        #expect(try Array(body.withUnsafeBytes { try ZstdDecoder().decodeAll($0, limit: nil) }) == first + second)
        var corrupted = body
        corrupted[corrupted.count - 1] ^= 0xFF  // the checksum's last byte
        try Self.expectCorruptInAnyChunking(corrupted)
    }

    /// zstd frames may follow one another (RFC 8878); brotli has one stream per body.
    @Test func zstdFramesFollowOneAnotherButBrotliStreamsDoNot() throws {
        let first = Payloads.text(count: 10_000)
        let second = Array("second frame".utf8)
        let frames = Compression.zstd(first, level: 3) + Compression.zstd(second, level: 3)
        let decoded = try frames.withUnsafeBytes { try ZstdDecoder().decodeAll($0, limit: nil) }
        #expect(Array(decoded) == first + second)
        let streams = Compression.brotli(first, quality: 5) + Compression.brotli(second, quality: 5)
        #expect(throws: ServiceError.self) {
            _ = try streams.withUnsafeBytes { try BrotliDecoder().decodeAll($0, limit: nil) }
        }
    }

    @Test func contentEncodingNamesTheNewCodings() throws {
        let fields: HTTPFields = [.contentEncoding: "gzip, BR, zstd"]
        #expect(try ContentCodings(headers: fields).applied == [.gzip, .brotli, .zstd])
        #expect(try ContentCodings(headers: fields).fieldValue == "gzip, br, zstd")
    }
}
