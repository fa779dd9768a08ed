import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import Testing

/// Trailer fields: a response's (HTTP/1.1 chunked, from the loopback server), on whole and
/// streamed bodies, within the head's limits; and a request's, sent after a streamed body.
/// HTTP/2 trailers (a trailing HEADERS frame) come from ``H2EchoServer``: the suite's nginx
/// 1.22 sends none on HTTP/2.
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

    @Test func http2TrailersArriveInATrailingHeadersFrame() async throws {
        let server = try await H2EchoServer.start()
        defer { server.stop() }
        let transport = CurlTransport()
        var options = TransferOptions()
        options.httpVersion = .http2PriorKnowledge
        func request(_ kind: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/trailers?kind=\(kind)")
        }
        let whole = try await transport.send(request("fields"), body: nil, options: options)
        #expect(whole.metrics.httpVersion == "2")
        #expect(String(decoding: whole.body, as: UTF8.self) == "hello, trailers")
        #expect(whole.trailers[checksum] == "7f3a")
        #expect(whole.trailers[serverTiming] == "db;dur=5")
        #expect(whole.head.headerFields[checksum] == nil)
        let streamed = try await transport.stream(request("fields"), body: nil, options: options)
        #expect(streamed.body.trailers == nil)
        _ = try await streamed.body.collect()
        #expect(streamed.body.trailers?[checksum] == "7f3a")
        let none = try await transport.send(request("none"), body: nil, options: options)
        #expect(none.trailers.isEmpty)
        // A NUL in a value, or a pseudo-header among the trailers: HTTP/2 forbids both.
        for kind in ["nul", "pseudo"] {
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(request(kind), body: nil, options: options)
            }
            #expect(error?.code == .malformedResponse, "\(kind): \(String(describing: error))")
        }
        await transport.shutdown()
    }

    @Test func aBodyThatFailsToDecodeShowsNoTrailers() async throws {
        try await withLoopback { server, transport in
            // The gzip stream lacks its end: the body fails after curl read the trailers whole.
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(server.request("/trailers?kind=gzipcut"), body: nil, options: .init())
            }
            #expect(
                error?.code == .truncatedBody || error?.code == .decompressionFailed, "\(String(describing: error))")
            let streamed = try await transport.stream(
                server.request("/trailers?kind=gzipcut"), body: nil, options: .init())
            await #expect(throws: ServiceError.self) { _ = try await streamed.body.collect() }
            #expect(streamed.body.trailers == nil)
        }
    }

    @Test func aDownloadKeepsTheTrailers() async throws {
        try await withLoopback { server, transport in
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("trailers-\(UUID()).txt").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let response = try await transport.download(server.request("/trailers?kind=gzip"), to: path)
            #expect(response.trailers[checksum] == "7f3a")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "hello, trailers")
        }
    }

    @Test(arguments: [
        ("nul", ServiceError.Code.malformedResponse), ("fold", .malformedResponse), ("noname", .malformedResponse),
        ("huge", .headersTooLarge), ("longline", .headersTooLarge),
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

    @Test(arguments: ["Content-Length", "Host", "Authorization", "Transfer-Encoding", "Trailer", "Content-Type"])
    func aRequestTrailerTheHeadMustCarryIsRefused(name: String) async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(
                AsyncStream<Data> {
                    $0.yield(Data("x".utf8))
                    $0.finish()
                }
            ) {
                HTTPFields([HTTPField(name: HTTPField.Name(name)!, value: "1")])
            }
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(server.request("/duplex", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .invalidRequest, "\(name): \(String(describing: error))")
            #expect(error?.message.contains(name) == true)
            // The connection is not left half-sent: the next request is answered.
            let next = try await transport.send(server.request("/json"), body: nil, options: .init())
            #expect(next.head.status == .ok)
        }
    }

    @Test func requestTrailersCannotGoOutOverHTTP2PriorKnowledge() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.httpVersion = .http2PriorKnowledge
            let body = RequestBody.stream(AsyncStream<Data> { $0.finish() }) { [checksum: "0"] }
            let error = await #expect(throws: ServiceError.self) {
                _ = try await transport.send(server.request("/duplex", method: .post), body: body, options: options)
            }
            #expect(error?.code == .invalidRequest)
            #expect(server.snapshot.requestCount == 0)
        }
    }

    @Test func aHandleThatSentTrailersSendsThemNoMore() async throws {
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1
        try await withLoopback(configuration: configuration) { server, transport in
            let withTrailers = RequestBody.stream(
                AsyncStream<Data> {
                    $0.yield(Data("one".utf8))
                    $0.finish()
                }
            ) {
                [checksum: "1"]
            }
            let first = try await transport.send(
                server.request("/duplex", method: .post), body: withTrailers, options: .init())
            #expect(first.trailers[HTTPField.Name("Echo-Checksum")!] == "1")
            // The same loop next (and the same connection): a streamed body without trailers, then
            // bytes. Had the handle been reused, curl 7.88 would write the chunk framing outside
            // its upload buffer, which the AddressSanitizer run of this test reports.
            let plain = RequestBody.stream(
                AsyncStream<Data> {
                    $0.yield(Data("two".utf8))
                    $0.finish()
                })
            let second = try await transport.send(
                server.request("/duplex", method: .post), body: plain, options: .init())
            #expect(String(decoding: second.body, as: UTF8.self) == "two")
            #expect(second.trailers[HTTPField.Name("Echo-Checksum")!] == nil)
            #expect(second.trailers[HTTPField.Name("Body-Length")!] == "3")
            let third = try await transport.send(
                server.request("/echo", method: .post), body: .string("three"), options: .init())
            #expect(third.head.status == .ok)
            let requests = server.requests(to: "/duplex") + server.requests(to: "/echo")
            #expect(requests.count == 3)
            #expect(requests.last?.header("Content-Length") == "5")
            #expect(requests.last?.header("Transfer-Encoding") == nil)
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
