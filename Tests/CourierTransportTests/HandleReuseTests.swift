import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// A loop reuses its easy handles without `curl_easy_reset` when the next transfer sets again
/// every option the last one set (`OptionFootprint`): nothing a transfer set may reach the next
/// one on the same handle. One loop, one transfer at a time, so each transfer gets the handle
/// the one before it used.
@Suite struct HandleReuseTests {
    func oneLoop() -> CurlTransport.Configuration {
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1
        return configuration
    }

    @Test func aBodilessGetAfterHeadAndUploadsIsAPlainGet() async throws {
        try await withLoopback(configuration: oneLoop()) { server, transport in
            let head = try await transport.send(server.request("/bytes?n=100", method: .head))
            #expect(head.body.isEmpty)
            #expect(try await transport.send(server.request("/bytes?n=100")).body.count == 100)
            for method in [HTTPRequest.Method.put, .post, .delete] {
                _ = try await transport.send(server.request("/echo", method: method), body: .string("abc"))
                let echo = try Echo(try await transport.send(server.request("/echo")).body)
                #expect(echo.method == "GET")
                #expect(echo.bodyLength == 0)
                #expect(echo.header("content-type") == nil)
            }
            _ = try await transport.send(server.request("/echo", method: .delete))
            #expect(try Echo(try await transport.send(server.request("/echo")).body).method == "GET")
        }
    }

    @Test func limitsAndTimeoutsEndWithTheTransferThatSetThem() async throws {
        try await withLoopback(configuration: oneLoop()) { server, transport in
            var limited = TransferOptions()
            limited.maximumBodySize = 10
            let tooLarge = await serviceError {
                _ = try await transport.send(server.request("/bytes?n=100"), body: nil, options: limited)
            }
            #expect(tooLarge?.code == .responseTooLarge)
            var unlimited = TransferOptions()
            unlimited.maximumBodySize = nil
            #expect(
                try await transport.send(server.request("/bytes?n=100"), body: nil, options: unlimited).body.count
                    == 100)

            var hurried = TransferOptions()
            hurried.timeout = .milliseconds(300)
            let timedOut = await serviceError {
                _ = try await transport.send(server.request("/stall"), body: nil, options: hurried)
            }
            #expect(timedOut?.code == .timedOut)
            // Takes 600 ms: the last transfer's 300 ms total timeout must not apply.
            let slow = try await transport.send(server.request("/slow-body?chunks=2&delayMs=300"))
            #expect(slow.body.count == 200)
        }
    }

    @Test func aDirectTransferAfterAProxiedOneGoesDirect() async throws {
        try await withLoopback(configuration: oneLoop()) { server, transport in
            var proxied = TransferOptions()
            proxied.proxy = .url("http://127.0.0.1:9", bypass: ["example.invalid"])
            let refused = await serviceError {
                _ = try await transport.send(server.request("/bytes?n=5"), body: nil, options: proxied)
            }
            #expect(refused != nil)
            let direct = try await transport.send(server.request("/bytes?n=5"))
            #expect(direct.body.count == 5)
            #expect(server.requests(to: "/bytes").count == 1)
        }
    }

    /// curl counts the retries of a request whose reused connection died per handle, and only
    /// `curl_easy_reset` clears the count: a handle kept without resets would fail its sixth
    /// retry with "Connection died, tried 5 times" however far apart the retries came.
    @Test func retriesOnDeadConnectionsDoNotAddUpAcrossTransfers() async throws {
        try await withLoopback(configuration: oneLoop()) { server, transport in
            for key in 0..<8 {
                _ = try await transport.send(server.request("/bytes?n=10"))
                // Sent over the connection `/bytes` left open, which the server then closes.
                let response = try await transport.send(server.request("/close-first?key=\(key)"))
                #expect(response.head.status == .ok)
                #expect(response.metrics.newConnections == 1)
            }
        }
    }
}
