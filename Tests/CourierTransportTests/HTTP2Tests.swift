import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import Testing

/// HTTP/2 against a real server: nginx with TLS and `http2` (ALPN), started per test.
@Suite struct HTTP2Tests {
    /// What nginx's `/echo/` route reports about the stream that carried it.
    struct StreamReport: Hashable {
        var serverProtocol: String
        /// nginx's serial number of the connection (the same for every stream on it).
        var connection: Int
        /// The stream's rank among the requests of its connection (1 for the first).
        var requestNumber: Int
        var uri: String

        init(_ body: Data) throws {
            let fields = String(decoding: body, as: UTF8.self).split(separator: " ").map(String.init)
            let numbers = fields.count == 4 ? (Int(fields[1]), Int(fields[2])) : (nil, nil)
            guard let connection = numbers.0, let requestNumber = numbers.1 else {
                throw UnexpectedEcho(text: String(decoding: body, as: UTF8.self))
            }
            (serverProtocol, self.connection, self.requestNumber, uri) = (
                fields[0], connection, requestNumber, fields[3]
            )
        }
    }

    struct UnexpectedEcho: Error { var text: String }

    /// Starts nginx and a transport that trusts its certificate authority, runs `body`, and
    /// stops both whether `body` throws or not.
    func withNginx<T>(_ body: (NginxServer, CurlTransport, TransferOptions) async throws -> T) async throws -> T {
        let server = try await NginxServer.start()
        // One loop: these tests count the connections curl multiplexes streams on, and several
        // loops each open their own under a heavy burst.
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1
        let transport = CurlTransport(configuration: configuration)
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = server.certificateAuthorityFile
        do {
            let result = try await body(server, transport, options)
            await transport.shutdown()
            server.stop()
            return result
        } catch {
            await transport.shutdown(cancellingInFlight: true)
            server.stop()
            throw error
        }
    }

    func get(_ authority: String, _ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: authority, path: path)
    }

    /// Sends `count` loads of `/echo/<index>` at once; returns each one's metrics and report,
    /// in index order.
    func concurrentEchoes(_ count: Int, to authority: String, on transport: CurlTransport, options: TransferOptions)
        async throws -> [(TransferMetrics, StreamReport)]
    {
        try await withThrowingTaskGroup(of: (Int, TransferMetrics, StreamReport).self) { group in
            for index in 0..<count {
                group.addTask {
                    let response = try await transport.send(
                        get(authority, "/echo/\(index)"), body: nil, options: options)
                    #expect(response.head.status == .ok)
                    return (index, response.metrics, try StreamReport(response.body))
                }
            }
            var results: [(Int, TransferMetrics, StreamReport)] = []
            for try await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        }
    }

    @Test func responsesArriveOverHTTP2ByDefaultAndOverHTTP1WhenAsked() async throws {
        try await withNginx { server, transport, options in
            let response = try await transport.send(get(server.authority, "/echo/first"), body: nil, options: options)
            let report = try StreamReport(response.body)
            #expect(response.metrics.httpVersion == "2")
            #expect(report.serverProtocol == "HTTP/2.0")
            #expect(report.uri == "/echo/first")
            #expect(response.metrics.tlsHandshake > .zero)

            var http1 = options
            http1.httpVersion = .http1
            let old = try await transport.send(get(server.authority, "/echo/old"), body: nil, options: http1)
            #expect(old.metrics.httpVersion == "1.1")
            #expect(try StreamReport(old.body).serverProtocol == "HTTP/1.1")
        }
    }

    @Test func cleartextRequestsWithPriorKnowledgeFollowOneAnother() async throws {
        // curl 7.x fails a second request on an h2c connection (curl bug #10634): with such a
        // libcurl each request gets a connection of its own, so none fails.
        let server = try await H2EchoServer.start()
        defer { server.stop() }
        let transport = CurlTransport()
        var options = TransferOptions()
        options.httpVersion = .http2PriorKnowledge
        let request = HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/trailers")
        let h2c = options
        for _ in 0..<5 {
            let response = try await transport.send(request, body: nil, options: options)
            #expect(response.metrics.httpVersion == "2")
            #expect(String(decoding: response.body, as: UTF8.self) == "hello, trailers")
        }
        let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<10 { group.addTask { try await transport.send(request, body: nil, options: h2c).body } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 10)
        #expect(bodies.allSatisfy { $0 == Data("hello, trailers".utf8) })
        await transport.shutdown()
    }

    @Test func aBodyWithTrailersGoesOutOverHTTP1WhereHTTP2IsOffered() async throws {
        try await withNginx { server, transport, options in
            let first = try await transport.send(get(server.authority, "/echo/first"), body: nil, options: options)
            #expect(first.metrics.httpVersion == "2")
            // With an HTTP/2 connection open, the body with trailers still goes out on HTTP/1.1.
            let body = RequestBody.stream(
                AsyncStream<Data> {
                    $0.yield(Data("part".utf8))
                    $0.finish()
                }
            ) {
                [HTTPField.Name("Checksum")!: "1"]
            }
            var request = get(server.authority, "/echo/trailers")
            request.method = .post
            let response = try await transport.send(request, body: body, options: options)
            #expect(response.metrics.httpVersion == "1.1")
            #expect(try StreamReport(response.body).serverProtocol == "HTTP/1.1")
        }
    }

    @Test func aHundredConcurrentLoadsShareOneConnection() async throws {
        try await withNginx { server, transport, options in
            let results = try await concurrentEchoes(100, to: server.authority, on: transport, options: options)
            #expect(results.count == 100)
            #expect(results.allSatisfy { $0.0.httpVersion == "2" })
            #expect(results.enumerated().allSatisfy { $0.element.1.uri == "/echo/\($0.offset)" })
            // curl's counters: one connect among the 100 transfers, all from one local port.
            #expect(results.map(\.0.newConnections).reduce(0, +) == 1)
            #expect(Set(results.map(\.0.localPort)).count == 1)
            // nginx's view: one connection, whose requests 1...100 are these 100 streams.
            #expect(Set(results.map(\.1.connection)).count == 1)
            #expect(Set(results.map(\.1.requestNumber)) == Set(1...100))
            // The pool's view: that one connection, idle now.
            let pool = await transport.poolSnapshot()
            #expect(pool.connections == ["https://\(server.authority)": .init(open: 1, inUse: 0)], "\(pool)")
            #expect(pool.loops.map(\.connecting) == [0])
        }
    }

    @Test func aStreamResetByTheServerFailsThatLoadAlone() async throws {
        try await withNginx { server, transport, options in
            let first = try await transport.send(get(server.authority, "/echo/first"), body: nil, options: options)
            let connection = try StreamReport(first.body).connection
            #expect(first.metrics.newConnections == 1)

            async let others = concurrentEchoes(20, to: server.authority, on: transport, options: options)
            let reset = await serviceError {
                _ = try await transport.send(get(server.authority, "/reset"), body: nil, options: options)
            }
            // nginx answers `return 444` on HTTP/2 with RST_STREAM(PROTOCOL_ERROR) and no
            // headers: curl 7.88 reports CURLE_HTTP2_STREAM (92), "HTTP/2 stream 3 was not closed
            // cleanly: PROTOCOL_ERROR (err 1)", which CurlErrorMapping files under
            // `malformedResponse`: the server broke off the exchange; not retried by default.
            #expect(reset?.code == .malformedResponse)
            let curl = reset?.underlying as? CurlError
            #expect(curl?.code == 92)
            #expect(curl?.message.contains("stream") == true)

            // The other streams, and the connection itself, carry on.
            let results = try await others
            #expect(results.count == 20)
            #expect(results.allSatisfy { $0.1.connection == connection && $0.0.localPort == first.metrics.localPort })
            let after = try await transport.send(get(server.authority, "/echo/after"), body: nil, options: options)
            #expect(after.metrics.newConnections == 0)
            #expect(try StreamReport(after.body).connection == connection)
        }
    }

    @Test func loadsInFlightAtAGoAwayAndAfterItSucceedOnNewConnections() async throws {
        try await withNginx { server, transport, options in
            let limit = NginxServer.requestsBeforeGoAway
            // The 35 streams go out together on the first connection (PIPEWAIT holds them until
            // it is up); nginx serves `limit`, sends GOAWAY(NO_ERROR, last stream id) and leaves
            // the rest unprocessed, which curl retries (as refused streams) on new connections.
            let burst = try await concurrentEchoes(35, to: server.goAwayAuthority, on: transport, options: options)
            #expect(burst.count == 35)
            #expect(burst.allSatisfy { $0.0.httpVersion == "2" && $0.1.serverProtocol == "HTTP/2.0" })
            var served = Dictionary(grouping: burst.map(\.1), by: \.connection).mapValues(\.count)
            #expect(served.count >= 4)
            #expect(served.values.allSatisfy { $0 <= limit })
            // Every connection nginx saw was opened by one of these transfers, as curl counts
            // them. (curl 7.88 either multiplexes the refused streams on one new connection or
            // gives each its own: both are fine here.)
            #expect(burst.map(\.0.newConnections).reduce(0, +) == served.count)

            // Later loads too: sequentially, past another GOAWAY.
            for index in 0..<(limit + 2) {
                let response = try await transport.send(
                    get(server.goAwayAuthority, "/echo/later-\(index)"), body: nil, options: options)
                let report = try StreamReport(response.body)
                #expect(report.uri == "/echo/later-\(index)")
                served[report.connection, default: 0] += 1
            }
            #expect(served.values.allSatisfy { $0 <= limit })
            #expect(served.count >= 5)
        }
    }
}
