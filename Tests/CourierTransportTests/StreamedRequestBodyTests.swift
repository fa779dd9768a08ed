import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// Request bodies from an `AsyncSequence` (`RequestBody.stream`), through a real curl transfer
/// to the loopback server: chunked and with a declared length, backpressure, failures of the
/// sequence, and the rule that a stream is sent once.
@Suite struct StreamedRequestBodyTests {
    /// `count` chunks of `size` pattern bytes, each produced when asked for; `produced` counts
    /// the bytes handed out.
    struct PatternChunks: AsyncSequence, Sendable {
        typealias Element = Data
        let count: Int
        let size: Int
        var produced: LockedValue<Int>? = nil
        var failAfter: Int? = nil
        /// The pattern made beforehand (a local of the test, not a global, which the leak
        /// checker would report), for a producer faster than the server.
        var source: Data? = nil

        struct ChunkFailure: Error {}

        struct AsyncIterator: AsyncIteratorProtocol {
            let chunks: PatternChunks
            var index = 0
            mutating func next() async throws -> Data? {
                guard index < chunks.count else { return nil }
                if let failAfter = chunks.failAfter, index == failAfter { throw ChunkFailure() }
                let offset = index * chunks.size
                index += 1
                chunks.produced?.withLock { $0 += chunks.size }
                // Sliced from bytes made once, so the producer is far faster than the server.
                if let source = chunks.source, offset + chunks.size <= source.count {
                    return source.subdata(in: offset..<offset + chunks.size)
                }
                return Data(Payloads.pattern(offset..<offset + chunks.size))
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
    }

    @Test func aBodyOfUnknownLengthGoesOutChunked() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(
                PatternChunks(count: 40, size: 10_000), contentType: "application/octet-stream")
            let response = try await transport.send(
                server.request("/echo", method: .post), body: body, options: .init())
            let echo = try Echo(response.body)
            #expect(echo.bodyLength == 400_000)
            #expect(echo.bodyCRC == Payloads.patternCRC(count: 400_000))
            #expect(echo.header("Transfer-Encoding")?.lowercased() == "chunked")
            #expect(echo.header("Content-Length") == nil)
            #expect(echo.header("Content-Type") == "application/octet-stream")
        }
    }

    @Test func aBodyOfDeclaredLengthGoesOutWithContentLength() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 7, size: 1_000), length: 7_000)
            let response = try await transport.send(server.request("/echo", method: .put), body: body, options: .init())
            let echo = try Echo(response.body)
            #expect(echo.method == "PUT")
            #expect(echo.bodyLength == 7_000)
            #expect(echo.bodyCRC == Payloads.patternCRC(count: 7_000))
            #expect(echo.header("Content-Length") == "7000")
            #expect(echo.header("Transfer-Encoding") == nil)
        }
    }

    @Test func anEmptySequenceSendsAnEmptyBody() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 0, size: 1))
            let response = try await transport.send(
                server.request("/echo", method: .post), body: body, options: .init())
            #expect(try Echo(response.body).bodyLength == 0)
        }
    }

    /// A producer far faster than the network is held at the transport's buffer: it is never
    /// more than the buffer (plus a chunk) ahead of what curl has taken, whatever the body's size.
    @Test func theProducerWaitsForTheTransportSoMemoryStaysBounded() async throws {
        var configuration = CurlTransport.Configuration()
        configuration.streamBufferSize = 64 << 10
        try await withLoopback(configuration: configuration) { server, transport in
            let produced = LockedValue(0)
            let (progress, reporter) = ProgressReporter.makeStream()
            var options = TransferOptions()
            options.progress = reporter
            // The producer's lead over what curl has taken, at each progress report.
            let lead = Task {
                var most = 0
                for await value in progress {
                    most = max(most, produced.withLock { $0 } - Int(value.bytesSent))
                }
                return most
            }
            let source = Data(Payloads.pattern(0..<(8 << 20)))
            let chunks = PatternChunks(count: 512, size: 16 << 10, produced: produced, source: source)  // 8 MiB
            let response = try await transport.send(
                server.request("/echo", method: .post), body: .stream(chunks), options: options)
            let echo = try Echo(response.body)
            #expect(echo.bodyLength == 8 << 20)
            #expect(echo.bodyCRC == Payloads.patternCRC(count: 8 << 20))
            // The buffer (64 KiB), a chunk past it and curl's own upload buffer, against the
            // 8 MiB a producer without backpressure would have handed over at once. The lead is
            // read when this task takes a report, which on a busy machine (the whole suite
            // at once) is late: 1.5 MiB was seen so, hence the margin.
            let most = await lead.value
            #expect(most < 4 << 20, "the producer ran \(most) bytes ahead of curl")
        }
    }

    @Test func aSequenceThatThrowsFailsTheRequestWithItsError() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 10, size: 1_000, failAfter: 3))
            let error = await serviceError {
                _ = try await transport.send(server.request("/echo", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .requestBodyFailed)
            #expect(error?.underlying is PatternChunks.ChunkFailure)
        }
    }

    @Test func aSequenceShorterThanItsDeclaredLengthFails() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 3, size: 1_000), length: 5_000)
            let error = await serviceError {
                _ = try await transport.send(server.request("/echo", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .requestBodyFailed)
            #expect(error?.message.contains("3000 of the 5000") == true)
        }
    }

    @Test func aSequenceLongerThanItsDeclaredLengthFails() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 3, size: 1_000), length: 2_500)
            let error = await serviceError {
                _ = try await transport.send(server.request("/echo", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .requestBodyFailed)
        }
    }

    /// A 307 keeps the method and the body: a stream cannot be sent twice, so the redirect
    /// fails with a typed error instead of sending an empty or partial body.
    @Test func aRedirectThatKeepsTheBodyFailsAsNotReplayable() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 2, size: 100))
            #expect(!body.isReplayable)
            let error = await serviceError {
                _ = try await transport.send(
                    server.request("/redirect-to?status=307&to=/echo", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .bodyNotReplayable)
            #expect(server.snapshot.requestCount == 1)
        }
    }

    /// A 303 turns the request into a GET without a body: nothing to resend, so it succeeds.
    @Test func aRedirectThatDropsTheBodyIsFollowed() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 2, size: 100))
            let response = try await transport.send(
                server.request("/redirect-to?status=303&to=/echo", method: .post), body: body, options: .init())
            #expect(try Echo(response.body).method == "GET")
        }
    }

    @Test func theSameStreamSentTwiceFailsTheSecondTime() async throws {
        try await withLoopback { server, transport in
            let body = RequestBody.stream(PatternChunks(count: 1, size: 10))
            _ = try await transport.send(server.request("/echo", method: .post), body: body, options: .init())
            let error = await serviceError {
                _ = try await transport.send(server.request("/echo", method: .post), body: body, options: .init())
            }
            #expect(error?.code == .bodyNotReplayable)
        }
    }

    /// Cancelling the request while its sequence waits for its next element ends both: the
    /// request with `cancelled`, and the sequence's wait (its task is cancelled).
    @Test func cancellingTheRequestCancelsAProducerThatWaits() async throws {
        try await withLoopback { server, transport in
            let (stream, continuation) = AsyncStream<Data>.makeStream()
            let ended = LockedValue(false)
            continuation.onTermination = { _ in ended.withLock { $0 = true } }
            continuation.yield(Data("first".utf8))
            let task = Task {
                try await transport.send(
                    server.request("/echo", method: .post), body: .stream(stream), options: .init())
            }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .cancelled)
            // Up to 30 s: under a sanitizer on a starved machine, the producer's task may wait
            // seconds for a thread.
            let deadline = ContinuousClock.now + .seconds(30)
            while !ended.withLock({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            let didEnd = ended.withLock { $0 }
            #expect(didEnd, "the sequence's iteration must end with the request")
        }
    }

    /// A producer slower than the idle limit is the caller's pace, not a stalled network.
    @Test func aSlowProducerIsNotAnIdleTransfer() async throws {
        try await withLoopback { server, transport in
            let (stream, continuation) = AsyncStream<Data>.makeStream()
            var options = TransferOptions()
            options.idleTimeout = .milliseconds(300)
            let task = Task {
                try await transport.send(
                    server.request("/echo", method: .post), body: .stream(stream), options: options)
            }
            for index in 0..<4 {
                continuation.yield(Data("part \(index);".utf8))
                try await Task.sleep(for: .milliseconds(200))
            }
            continuation.finish()
            let echo = try Echo(try await task.value.body)
            #expect(echo.body == "part 0;part 1;part 2;part 3;")
        }
    }
}
