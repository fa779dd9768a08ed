import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

@Suite struct ContentDecodingTests {
    @Test(arguments: ["/gzip", "/deflate", "/deflate-raw"], [0, 1, 1_000, 100_000, 3_000_000])
    func compressedBodiesInflateByteExact(route: String, size: Int) async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("\(route)?n=\(size)"))
            #expect(response.head.status == .ok)
            #expect(Array(response.body) == Payloads.text(count: size))
            #expect(response.head.headerFields[.contentEncoding] == nil)
            #expect(response.head.headerFields[.contentLength] == nil)
            #expect(response.metrics.decodedContentEncoding == (route == "/gzip" ? "gzip" : "deflate"))
        }
    }

    @Test func anIdentityBodyReportsNothingDecoded() async throws {
        try await withLoopback { server, transport in
            let sent = try await transport.send(server.request("/json"))
            #expect(sent.metrics.decodedContentEncoding == "")
            let streamed = try await transport.stream(server.request("/json"))
            #expect(streamed.metrics.decodedContentEncoding == "")
            _ = try await streamed.body.collect()
        }
    }

    @Test func courierAdvertisesOnlyTheEncodingsItDecodes() async throws {
        try await withLoopback { server, transport in
            let echo = try Echo(try await transport.send(server.request("/echo")).body)
            #expect(echo.header("accept-encoding") == "gzip, deflate, br, zstd")
        }
    }

    @Test func withDecompressionOffBodiesArriveAsSent() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.decompressesResponses = false
            let echo = try Echo(try await transport.send(server.request("/echo"), body: nil, options: options).body)
            #expect(echo.header("accept-encoding") == nil)
            let raw = try await transport.send(server.request("/gzip?n=1000"), body: nil, options: options)
            #expect(raw.head.headerFields[.contentEncoding] == "gzip")
            #expect(raw.metrics.decodedContentEncoding == "")
            #expect(Array(raw.body) == Compression.compress(Payloads.text(count: 1000), format: .gzip))
        }
    }

    @Test func aCorruptGzipBodyIsADecompressionError() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request("/gzip-corrupt")) }
            #expect(error?.code == .decompressionFailed)
        }
    }

    @Test func aTruncatedGzipBodyIsAnErrorNotAShortBody() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request("/gzip-truncated")) }
            #expect(error?.code == .decompressionFailed)
        }
    }

    @Test func garbageAfterTheGzipStreamIsAnError() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request("/gzip-trailing-garbage")) }
            #expect(error?.code == .decompressionFailed)
        }
    }

    @Test func aDecompressionBombStopsAtTheDecodedLimit() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = 1 << 20
            let error = await serviceError {
                _ = try await transport.send(server.request("/gzip-bomb?mb=16"), body: nil, options: options)
            }
            #expect(error?.code == .responseTooLarge)
        }
    }

    @Test("a body in a coding Courier does not know is handed on as it came, with its Content-Encoding")
    func anUnknownCodingIsHandedOnAsItCame() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/unknown-encoding"))
            #expect(String(decoding: response.body, as: UTF8.self) == "not really compressed")
            #expect(response.head.headerFields[.contentEncoding] == "compress")
            #expect(response.metrics.decodedContentEncoding == "")
            // A known coding over an unknown one is not undone either: the bytes stay whole.
            let request = server.request("/stacked?codings=x-custom,gzip&n=100")
            let gzipped = Compression.compress(Payloads.text(count: 100), format: .gzip)
            let stacked = try await transport.send(request)
            #expect(Array(stacked.body) == gzipped)
            #expect(stacked.head.headerFields[.contentEncoding] == "x-custom, gzip")
            let streamed = try await transport.stream(request)
            #expect(streamed.head.headerFields[.contentEncoding] == "x-custom, gzip")
            #expect(Array(try await streamed.body.collect()) == gzipped)
        }
    }
}

@Suite struct InflaterTests {
    @Test func concatenatedGzipMembersInflateInOrder() throws {
        let first = Payloads.text(count: 5_000)
        let second = Array("second member".utf8)
        let input = Compression.compress(first, format: .gzip) + Compression.compress(second, format: .gzip)
        let output = try input.withUnsafeBytes { try Inflater(encoding: .gzip).inflateAll($0, limit: nil) }
        #expect(Array(output) == first + second)
    }

    @Test func streamingInflateMatchesOneShotForAnyChunking() throws {
        let original = Payloads.text(count: 200_000)
        let compressed = Compression.compress(original, format: .gzip)
        for chunkSize in [1, 7, 1_000, 65_536] {
            let inflater = Inflater(encoding: .gzip)
            var output: [UInt8] = []
            var offset = 0
            while offset < compressed.count {
                let end = min(offset + chunkSize, compressed.count)
                try compressed[offset..<end].withUnsafeBytes { bytes in
                    try inflater.inflate(bytes, limit: nil) { output.append(contentsOf: $0) }
                }
                offset = end
            }
            try inflater.finish()
            #expect(output == original, "chunk size \(chunkSize)")
        }
    }

    @Test func aStreamThatStopsEarlyFailsAtFinish() throws {
        let compressed = Compression.compress(Payloads.text(count: 10_000), format: .zlib)
        let inflater = Inflater(encoding: .deflate)
        try compressed.dropLast(10).withUnsafeBytes { bytes in
            try inflater.inflate(bytes, limit: nil) { _ in }
        }
        #expect(throws: ServiceError.self) { try inflater.finish() }
    }
}

/// Stacked codings (RFC 9110, 8.4: listed in the order applied) are undone in reverse order.
@Suite struct StackedContentCodingTests {
    @Test(
        arguments: [
            "gzip,gzip", "deflate,gzip", "gzip,deflate", "gzip,gzip,gzip,gzip,gzip", "br,gzip", "zstd,br",
            "gzip,zstd,br", "zstd,zstd",
        ], [0, 5_000, 400_000])
    func stackedCodingsDecodeInReverseOrder(codings: String, size: Int) async throws {
        try await withLoopback { server, transport in
            let request = server.request("/stacked?codings=\(codings)&n=\(size)")
            let response = try await transport.send(request)
            #expect(Array(response.body) == Payloads.text(count: size))
            #expect(response.head.headerFields[.contentEncoding] == nil)
            let applied = codings.split(separator: ",").joined(separator: ", ")
            #expect(response.metrics.decodedContentEncoding == applied)
            let streamed = try await transport.stream(request)
            #expect(streamed.head.headerFields[.contentEncoding] == nil)
            #expect(streamed.metrics.decodedContentEncoding == applied)
            #expect(Array(try await streamed.body.collect()) == Payloads.text(count: size))
        }
    }

    @Test func moreCodingsThanTheCapAreATypedError() async throws {
        try await withLoopback { server, transport in
            let request = server.request("/stacked?codings=gzip,gzip,gzip,gzip,gzip,gzip&n=100")
            let error = await serviceError { _ = try await transport.send(request) }
            #expect(error?.code == .unsupportedEncoding)
            #expect(error?.isRetryable == false)
        }
    }

    @Test func aBombInsideAStackIsCaughtAtEveryLayer() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = 100_000
            let request = server.request("/stacked?codings=gzip,gzip&n=1000000")
            let error = await serviceError { _ = try await transport.send(request, body: nil, options: options) }
            #expect(error?.code == .responseTooLarge)
        }
    }
}
