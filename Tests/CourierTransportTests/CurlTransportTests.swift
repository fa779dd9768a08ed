import CourierCore
import CourierTestServer
import CourierTransport
import Foundation
import Testing

@Suite struct CurlTransportTests {
    @Test func aSimpleGetReturnsHeadBodyAndMetrics() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/json"))
            #expect(response.head.status == .ok)
            #expect(response.head.headerFields[.contentType] == "application/json")
            #expect(Array(response.body) == Payloads.smallJSON)
            #expect(response.metrics.httpVersion == "1.1")
            #expect(response.metrics.total > .zero)
            // curl's timers run from the hop's start, each phase after the one before it.
            #expect(response.metrics.nameLookup <= response.metrics.connect)
            #expect(response.metrics.connect <= response.metrics.firstByte)
            #expect(response.metrics.firstByte > .zero && response.metrics.firstByte <= response.metrics.total)
            #expect(response.metrics.tlsHandshake == .zero)
            #expect(response.metrics.bytesReceived == Int64(Payloads.smallJSON.count))
        }
    }

    @Test func sequentialRequestsReuseAHandfulOfConnections() async throws {
        try await withLoopback { server, transport in
            var newConnections = 0
            for index in 0..<1_000 {
                let response = try await transport.send(server.request("/bytes?n=\(index % 50 + 1)"))
                #expect(response.body.count == index % 50 + 1)
                newConnections += response.metrics.newConnections
            }
            #expect(server.snapshot.connectionsAccepted <= 3)
            #expect(newConnections <= 3)
            #expect(server.snapshot.requestCount == 1_000)
        }
    }

    @Test func fiveHundredConcurrentTransfersAllArriveIntact() async throws {
        try await withLoopback { server, transport in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        let size = 1_000 + index * 37
                        let response = try await transport.send(server.request("/bytes?n=\(size)"))
                        return response.head.status == .ok && response.body.count == size
                            && Payloads.isPattern(response.body)
                    }
                }
                var correct = 0
                for try await ok in group where ok { correct += 1 }
                #expect(correct == 500)
            }
        }
    }

    @Test("options are values: a copy changed later leaves the original, and its transfers, as they were")
    func optionsAreValues() async throws {
        var original = TransferOptions()
        original.maximumBodySize = 10
        var copy = original
        copy.maximumBodySize = nil
        copy.timeout = .seconds(5)
        copy.tls.verifiesPeer = false
        #expect(original.maximumBodySize == 10 && original.timeout == nil && original.tls.verifiesPeer)
        #expect(copy.maximumBodySize == nil && copy.timeout == .seconds(5) && !copy.tls.verifiesPeer)
        // Defaults are shared until changed: changing one default value changes no other.
        var changed = TransferOptions()
        changed.idleTimeout = nil
        #expect(TransferOptions().idleTimeout == .seconds(60))
        try await withLoopback { server, transport in
            await #expect(throws: ServiceError.self) {
                try await transport.send(server.request("/bytes?n=100"), body: nil, options: original)
            }
            let response = try await transport.send(server.request("/bytes?n=100"), body: nil, options: copy)
            #expect(response.body.count == 100)
        }
    }

    @Test func methodsHeadersAndBodiesReachTheServer() async throws {
        try await withLoopback { server, transport in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain"
            headers[HTTPField.Name("X-Trace")!] = "abc"
            for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
                let response = try await transport.send(
                    server.request("/echo", method: method, headers: headers), body: .string("hello \(method)"))
                let echo = try Echo(response.body)
                #expect(echo.method == method.rawValue)
                #expect(echo.body == "hello \(method)")
                #expect(echo.header("x-trace") == "abc")
                #expect(echo.header("content-type") == "text/plain")
                #expect(echo.header("expect") == nil)
            }
            let head = try await transport.send(server.request("/json", method: .head))
            #expect(head.head.status == .ok)
            #expect(head.body.isEmpty)
            let delete = try Echo(try await transport.send(server.request("/echo", method: .delete)).body)
            #expect(delete.method == "DELETE")
            #expect(delete.bodyLength == 0)
        }
    }

    /// Two chunks of a body whose length is declared; the second is held back until the
    /// progress stream has shown the first sent, so a value from the middle of the upload is
    /// seen (the last one is filled in from the final counts either way).
    @Test func progressCountsAnUploadAgainstItsDeclaredLength() async throws {
        struct TwoChunks: AsyncSequence, Sendable {
            let chunk: Data
            let seen: LockedValue<[TransferProgress]>
            func makeAsyncIterator() -> Iterator { Iterator(chunk: chunk, seen: seen) }
            struct Iterator: AsyncIteratorProtocol {
                let chunk: Data
                let seen: LockedValue<[TransferProgress]>
                var sent = 0
                mutating func next() async throws -> Data? {
                    guard sent < 2 else { return nil }
                    if sent == 1 {
                        let start = ContinuousClock.now
                        while !seen.withLock({ $0.contains { $0.bytesSent > 0 } }),
                            ContinuousClock.now - start < .seconds(30)
                        {
                            try await Task.sleep(for: .milliseconds(10))
                        }
                    }
                    sent += 1
                    return chunk
                }
            }
        }
        try await withLoopback { server, transport in
            let chunk = Data(repeating: 0x61, count: 64 << 10)
            let seen = LockedValue<[TransferProgress]>([])
            let (progress, reporter) = ProgressReporter.makeStream()
            var options = TransferOptions()
            options.progress = reporter
            let collector = Task { for await value in progress { seen.withLock { $0.append(value) } } }
            let body = RequestBody.stream(TwoChunks(chunk: chunk, seen: seen), length: 2 * chunk.count)
            let response = try await transport.send(
                server.request("/echo", method: .post), body: body, options: options)
            #expect(try Echo(response.body).bodyLength == 2 * chunk.count)
            await collector.value
            let values = seen.withLock { $0 }
            let midway = values.filter { $0.bytesSent > 0 && $0.bytesSent < Int64(2 * chunk.count) }
            #expect(!midway.isEmpty, "the upload was seen before its end: \(values)")
            #expect(midway.allSatisfy { $0.expectedBytesToSend == Int64(2 * chunk.count) })
            #expect(values.last?.bytesSent == Int64(2 * chunk.count))
        }
    }

    @Test func aBodyWithoutContentTypeIsNotLabelledAsAForm() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/echo", method: .post), body: .string("x=1"))
            #expect(try Echo(response.body).header("content-type") == nil)
        }
    }

    @Test func statusCodesAreReturnedNotThrown() async throws {
        try await withLoopback { server, transport in
            for code in [204, 404, 500, 503] {
                let response = try await transport.send(server.request("/status/\(code)"))
                #expect(response.head.status.code == code)
            }
        }
    }

    @Test func cancellingOneOfAHundredTransfersLeavesTheOthersToFinish() async throws {
        try await withLoopback { server, transport in
            let slow = Task { try await transport.send(server.request("/stall")) }
            let others = (0..<99).map { index in
                Task { try await transport.send(server.request("/slow-body?chunks=2&delayMs=\(index % 5 * 10)")) }
            }
            while server.requests(to: "/stall").isEmpty { await Task.yield() }
            slow.cancel()
            let error = await serviceError { _ = try await slow.value }
            #expect(error?.code == .cancelled)
            var finished = 0
            for task in others {
                let response = try await task.value
                if response.body.count == 200 { finished += 1 }
            }
            #expect(finished == 99)
        }
    }

    @Test func aCancelledTaskNeverStartsItsTransfer() async throws {
        try await withLoopback { server, transport in
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await transport.send(server.request("/json"))
            }
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .cancelled)
        }
    }

    @Test func shutdownDrainsInFlightTransfersAndRefusesNewOnes() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let inFlight = Task { try await transport.send(server.request("/slow-body?chunks=3&delayMs=30")) }
        while server.requests(to: "/slow-body").isEmpty { await Task.yield() }
        await transport.shutdown()
        #expect(try await inFlight.value.body.count == 300)
        let error = await serviceError { _ = try await transport.send(server.request("/json")) }
        #expect(error?.code == .shutDown)
        await server.stop()
    }

    @Test func shutdownCanCancelInFlightTransfers() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let inFlight = Task { try await transport.send(server.request("/stall")) }
        while server.requests(to: "/stall").isEmpty { await Task.yield() }
        await transport.shutdown(cancellingInFlight: true)
        let error = await serviceError { _ = try await inFlight.value }
        #expect(error?.code == .shutDown)
        await server.stop()
    }

    @Test func unixDomainSocketsCarryRequests() async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("server.sock")
        let server = try await TestServer.start(unixSocketPath: socket)
        let transport = CurlTransport()
        var options = TransferOptions()
        options.unixSocketPath = socket
        let request = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/json")
        let response = try await transport.send(request, body: nil, options: options)
        #expect(Array(response.body) == Payloads.smallJSON)
        // The pool counts the connection under the socket's path and the origin.
        let pool = await transport.poolSnapshot()
        #expect(pool.connections == ["\(socket) http://localhost": .init(open: 1, inUse: 0)], "\(pool)")
        await transport.shutdown()
        await server.stop()
    }

    @Test func theLoadedCurlReportsItsFeatures() {
        let features = CurlFeatures.current
        #expect(!features.version.isEmpty)
        #expect(features.supportsUnixSockets)
        // The libcurl the set-up commands install is built with a TLS library and nghttp2.
        #expect(!features.tlsLibrary.isEmpty && features.tlsLibrary != "none")
        #expect(features.supportsHTTP2)
        #expect(features.description.contains(features.tlsLibrary))
    }
}
