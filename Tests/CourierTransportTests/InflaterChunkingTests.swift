import CourierTestServer
import Testing

@testable import CourierTransport

/// Chunk boundaries are the network's choice: where they fall must not change the result.
@Suite struct InflaterChunkingTests {
    func inflateChunked(_ input: [UInt8], encoding: ContentEncoding, chunk: Int) throws -> [UInt8] {
        let inflater = Inflater(encoding: encoding)
        var output: [UInt8] = []
        var offset = 0
        while offset < input.count {
            let end = min(offset + chunk, input.count)
            try input[offset..<end].withUnsafeBytes { bytes in
                try inflater.inflate(bytes, limit: nil) { output.append(contentsOf: $0) }
            }
            offset = end
        }
        try inflater.finish()
        return output
    }

    /// Found by `scripts/fuzz.sh inflate`: when a chunk ended exactly where a gzip member did,
    /// the next member was refused as "data after the end" (one-shot inflation accepted it).
    @Test(arguments: [1, 2, 13, 26, 4_096])
    func concatenatedGzipMembersSurviveAnyChunking(chunk: Int) throws {
        let first = Compression.compress(Array("hello ".utf8), format: .gzip)
        let input = first + Compression.compress(Array("world".utf8), format: .gzip)
        #expect(first.count == 26)
        #expect(try inflateChunked(input, encoding: .gzip, chunk: chunk) == Array("hello world".utf8))
        let whole = try input.withUnsafeBytes { try Inflater(encoding: .gzip).inflateAll($0, limit: nil) }
        #expect(Array(whole) == Array("hello world".utf8))
    }

    /// Found by the inflate fuzz target in CI: two gzip members, the first with a damaged
    /// header byte. One-shot inflation and 3-byte chunks must agree on accepting or refusing.
    @Test(arguments: [1, 2, 3, 7, 4_096])
    func aDamagedFirstMemberIsJudgedAlikeWholeAndChunked(chunk: Int) throws {
        let input: [UInt8] = [
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0x00,
            0x00, 0xf6, 0xf9, 0x81, 0xed, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x02, 0x03, 0x2b, 0xcf, 0x2f, 0xca, 0x49, 0x01, 0x00, 0x43, 0x11, 0x77, 0x3a, 0x05, 0x00, 0x00, 0x00,
        ]
        let whole = Result {
            try input.withUnsafeBytes { try Inflater(encoding: .gzip).inflateAll($0, limit: 1 << 20) }
        }
        let chunked = Result { try inflateChunked(input, encoding: .gzip, chunk: chunk) }
        switch (whole, chunked) {
        case (.success(let a), .success(let b)): #expect(Array(a) == b)
        case (.failure, .failure): break
        default: Issue.record("one-shot \(whole) but chunked \(chunked)")
        }
    }

    /// Found with the inflate target's invariant (a zlib stream at chunk size 1): one byte cannot
    /// tell a zlib header from raw deflate, and the first chunk alone was taken as raw deflate.
    @Test(arguments: [Compression.Format.zlib, .raw], [1, 2, 7])
    func deflateSurvivesAOneByteFirstChunk(format: Compression.Format, chunk: Int) throws {
        let original = Array("hello world, hello deflate".utf8)
        let stream = Compression.compress(original, format: format)
        #expect(try inflateChunked(stream, encoding: .deflate, chunk: chunk) == original)
    }

    @Test func aOneByteDeflateBodyIsTruncated() {
        #expect(throws: ServiceError.self) { try inflateChunked([0x78], encoding: .deflate, chunk: 1) }
    }

    @Test(arguments: [1, 26, 4_096])
    func garbageOrACutMemberAfterAGzipMemberStillFails(chunk: Int) {
        let member = Compression.compress(Array("hello ".utf8), format: .gzip)
        for tail in [Array("junk".utf8), [0x1F], Array(member.prefix(12))] {
            #expect(throws: ServiceError.self) { try inflateChunked(member + tail, encoding: .gzip, chunk: chunk) }
        }
    }

    @Test(arguments: [1, 7, 4_096])
    func deflateStreamsStillRefuseTrailingData(chunk: Int) {
        let stream = Compression.compress(Array("hello".utf8), format: .zlib)
        #expect(throws: ServiceError.self) { try inflateChunked(stream + stream, encoding: .deflate, chunk: chunk) }
    }
}
