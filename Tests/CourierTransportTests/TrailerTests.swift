import CourierTestServer
import Foundation
import HTTPTypes
import Testing

@testable import CourierTransport

/// Trailer fields: a response's (HTTP/1.1 chunked, from the loopback server), on whole and
/// streamed bodies, within the head's limits; and a request's, sent after a streamed body.
/// (HTTP/2 trailers take the same path through the header callback; the suite's nginx 1.22
/// sends none on HTTP/2, so no test here shows them.)
@Suite struct TrailerTests {
    let checksum = HTTPField.Name("Checksum")!
    let serverTiming = HTTPField.Name("Server-Timing")!

    @Test func aChunkedResponseKeepsItsTrailersApartFromItsHead() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/trailers"), body: nil, options: .init())
            #expect(String(decoding: response.body, as: UTF8.self) == "hello, trailers")
            #expect(response.trailers[checksum] == "7f3a")
            #expect(response.trailers[serverTiming] == "db;dur=5")
            #expect(response.trailers.count == 2)
            #expect(response.head.headerFields[checksum] == nil)
        }
    }

    @Test func aStreamedBodyHasItsTrailersOnceItEnded() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.stream(server.request("/trailers"), body: nil, options: .init())
            #expect(response.body.trailers == nil)  // the end is not read yet
            let body = try await response.body.collect()
            #expect(String(decoding: body, as: UTF8.self) == "hello, trailers")
            #expect(response.body.trailers?[checksum] == "7f3a")
            #expect(response.body.trailers?.count == 2)
        }
    }

    @Test func aResponseWithoutTrailersHasNone() async throws {
        try await withLoopback { server, transport in
            let chunked = try await transport.send(server.request("/trailers?kind=none"), body: nil, options: .init())
            #expect(chunked.trailers.isEmpty)
            let plain = try await transport.stream(server.request("/json"), body: nil, options: .init())
            _ = try await plain.body.collect()
            #expect(plain.body.trailers == [:])
        }
    }

    @Test func decodingTheBodyLeavesTheTrailers() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/trailers?kind=gzip"), body: nil, options: .init())
            #expect(String(decoding: response.body, as: UTF8.self) == "hello, trailers")
            #expect(response.metrics.decodedContentEncoding == "gzip")
            #expect(response.trailers[checksum] == "7f3a")
        }
    }

    @Test(arguments: [
        ("nul", ServiceError.Code.malformedResponse), ("fold", .malformedResponse), ("noname", .malformedResponse),
        ("huge", .headersTooLarge),
    ])
    func badTrailersFailWithATypedError(kind: String, code: ServiceError.Code) async throws {
        try await withLoopback { server, transport in
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(server.request("/trailers?kind=\(kind)"), body: nil, options: .init())
            }
            #expect(error?.code == code, "\(kind): \(String(describing: error))")
            // Streamed, the body's end is where the failure shows.
            let streamed = try await transport.stream(
                server.request("/trailers?kind=\(kind)"), body: nil, options: .init())
            let streamError = await #expect(throws: ServiceError.self) { _ = try await streamed.body.collect() }
            #expect(streamError?.code == code, "\(kind), streamed")
            #expect(streamed.body.trailers == nil)
        }
    }

    @Test func aStreamedRequestBodySendsItsTrailersAfterTheLastChunk() async throws {
        try await withLoopback { server, transport in
            let sent = LockedValue(0)
            let chunks = AsyncStream<Data> { continuation in
                for index in 0..<5 { continuation.yield(Data(Payloads.pattern(index * 100..<(index + 1) * 100))) }
                continuation.finish()
            }
            // The trailers are computed once the sequence has ended: here, what was sent.
            let counted = chunks.map { chunk in
                sent.withLock { $0 += chunk.count }
                return chunk
            }
            let body = RequestBody.stream(counted) {
                HTTPFields([
                    HTTPField(name: HTTPField.Name("Sent-Length")!, value: "\(sent.withLock { $0 })"),
                    HTTPField(name: HTTPField.Name("Digest-Kind")!, value: "crc"),
                ])
            }
            let response = try await transport.send(
                server.request("/duplex", method: .post), body: body, options: .init())
            #expect(response.body.count == 500)
            #expect(response.trailers[HTTPField.Name("Echo-Sent-Length")!] == "500")
            #expect(response.trailers[HTTPField.Name("Echo-Digest-Kind")!] == "crc")
            #expect(response.trailers[HTTPField.Name("Body-Length")!] == "500")
        }
    }

    @Test func requestTrailersNeedABodyOfUnknownLength() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(AsyncStream<Data> { $0.finish() }, length: 10) { [checksum: "0"] }
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(server.request("/duplex", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .invalidRequest)
            #expect(server.snapshot.requestCount == 0)
        }
    }
}
