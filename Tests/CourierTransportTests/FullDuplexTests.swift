import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import Testing

/// Full duplex: the response head and body are read while the request body is still being
/// produced. Each test sends a chunk, waits for its echo, and only then produces the next, so a
/// transport that waited for the whole body before reading the response would never get past
/// the first chunk (the time limit ends it).
///
/// HTTP/1.1 against the loopback server's `/duplex` route; HTTP/2 against ``H2EchoServer``
/// (h2c). Not against the suite's nginx: as a proxy it holds the upstream's response until the
/// request body has been sent whole (measured with the curl command line).
@Suite struct FullDuplexTests {
    /// A request body the test feeds by hand.
    struct Feed {
        let chunks: AsyncStream<Data>
        let continuation: AsyncStream<Data>.Continuation

        init() { (chunks, continuation) = AsyncStream<Data>.makeStream() }
    }

    /// Sends `rounds` chunks of `size` bytes one at a time, each after the previous one's echo
    /// came back whole; returns the response's trailers.
    func echoRounds(
        _ rounds: Int, size: Int, transport: CurlTransport, request: HTTPRequest, options: TransferOptions,
        trailers: (@Sendable () async throws -> HTTPFields)? = nil
    ) async throws -> HTTPFields? {
        let feed = Feed()
        let response = try await transport.stream(
            request, body: .stream(feed.chunks, contentType: "application/octet-stream", trailers: trailers),
            options: options)
        #expect(response.head.status == .ok)
        var iterator = response.body.makeAsyncIterator()
        var pending = Data()
        for round in 0..<rounds {
            let chunk = Data(Payloads.pattern(round * size..<(round + 1) * size))
            feed.continuation.yield(chunk)
            while pending.count < size {
                guard let piece = try await iterator.next() else {
                    Issue.record("The echo ended after \(round) rounds")
                    return nil
                }
                pending.append(piece)
            }
            #expect(pending.prefix(size) == chunk, "round \(round)")
            pending.removeFirst(size)
        }
        feed.continuation.finish()
        while let piece = try await iterator.next() { pending.append(piece) }
        #expect(pending.isEmpty)
        return response.body.trailers
    }

    @Test(.timeLimit(.minutes(1)))
    func anHTTP1EchoRunsChunkByChunkWhileTheBodyIsSent() async throws {
        try await withLoopback { server, transport in
            let trailers = try await echoRounds(
                100, size: 1_000, transport: transport, request: server.request("/duplex", method: .post),
                options: TransferOptions())
            // The server's count of what it received, sent after the body: all 100 chunks.
            #expect(trailers?[HTTPField.Name("Body-Length")!] == "100000")
            #expect(trailers?[HTTPField.Name("Body-CRC")!] == "\(Payloads.patternCRC(count: 100_000))")
            #expect(server.requests(to: "/duplex").first?.header("Transfer-Encoding")?.lowercased() == "chunked")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func anHTTP2EchoRunsChunkByChunkWhileTheBodyIsSent() async throws {
        let server = try await H2EchoServer.start()
        defer { server.stop() }
        let transport = CurlTransport()
        var options = TransferOptions()
        options.httpVersion = .http2PriorKnowledge
        let request = HTTPRequest(method: .post, scheme: "http", authority: server.authority, path: "/duplex")
        do {
            let trailers = try await echoRounds(
                100, size: 1_000, transport: transport, request: request, options: options)
            // Each chunk went out as DATA and came back as DATA; the server's count ends the stream.
            #expect(trailers?[HTTPField.Name("Body-Length")!] == "100000")
            #expect(trailers?[HTTPField.Name("Body-CRC")!] == "\(Payloads.patternCRC(count: 100_000))")
            await transport.shutdown()
        } catch {
            await transport.shutdown(cancellingInFlight: true)
            throw error
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func theResponseCanEndBeforeTheBodyIsProduced() async throws {
        // The server answers at once; a caller that stops reading and drops the response stops
        // the producer too, which would otherwise wait forever for room or a reader.
        try await withLoopback { server, transport in
            let feed = Feed()
            let (ended, endedContinuation) = AsyncStream<Void>.makeStream()
            feed.continuation.onTermination = { _ in endedContinuation.finish() }
            let response = try await transport.stream(
                server.request("/duplex", method: .post), body: .stream(feed.chunks), options: TransferOptions())
            #expect(response.head.status == .ok)
            feed.continuation.yield(Data("first".utf8))
            response.body.cancel()
            // Nothing here finishes the feed: the transport must stop the producer's iteration
            // itself (the time limit fails a producer left waiting).
            for await _ in ended {}
            let next = try await transport.send(server.request("/json"), body: nil, options: TransferOptions())
            #expect(next.head.status == .ok)
        }
    }
}
