import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// A server that stops sending, at any stage, ends the transfer with `timedOut` after the idle
/// limit, with nothing else configured.
@Suite struct IdleTimeoutTests {
    @Test func theDefaultsLimitIdleTime() {
        let options = TransferOptions()
        #expect(options.idleTimeout == .seconds(60))
        #expect(options.timeout == nil)
    }

    @Test(arguments: ["/stall-before-head", "/stall-after-head", "/stall"])
    func aStallAtAnyStageTimesOut(route: String) async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.idleTimeout = .seconds(1)
            let error = await serviceError {
                _ = try await transport.send(server.request(route), body: nil, options: options)
            }
            #expect(error?.code == .timedOut, "\(route): \(String(describing: error))")
            #expect(error?.isRetryable == true)
        }
    }

    /// The same stalls, timed from when the server went silent to when the error reached a task
    /// on the transport's loop thread (so a busy cooperative pool does not count): within a few
    /// milliseconds of the limit, plus slack for a loaded or sanitized run. curl's speed average,
    /// used before, ended a stall after a few body bytes about 6 s late.
    @Test(arguments: ["", PacedServer.Script.head, PacedServer.Script.head + "0123456789"])
    func aStallAtAnyStageEndsSoonAfterTheLimit(prefix: String) async throws {
        let server = try PacedServer(script: PacedServer.Script(prefix: prefix, silence: .seconds(10)))
        defer { server.stop() }
        let transport = CurlTransport()
        var options = TransferOptions()
        options.idleTimeout = .seconds(1)
        let request = HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/stall")
        let (error, sent, failedAt) = await withTaskExecutorPreference(transport.taskExecutor) {
            let sent = ContinuousClock.now
            let error = await serviceError { _ = try await transport.send(request, body: nil, options: options) }
            return (error, sent, ContinuousClock.now)
        }
        await transport.shutdown(cancellingInFlight: true)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        let silent = try #require(server.silenceStarts.first)
        // The client's clock starts when its request left, after `sent` (the coarse clock can be
        // a few milliseconds early). The server notes its silence once it has read the request, a
        // moment later that grew to 0.5 s in a loaded sanitized run: the lower bound is not taken
        // from it.
        #expect(failedAt - sent >= .milliseconds(950), "\(failedAt - sent)")
        #expect(failedAt - silent < .milliseconds(2500), "\(failedAt - silent)")
    }

    @Test func aSlowButSteadyBodyIsNotIdle() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.idleTimeout = .seconds(3)
            // 16 pieces 300 ms apart: 4.8 s in all, longer than the limit, but never near 3 s
            // without a byte (a 1 s limit failed once on a loaded machine under TSan).
            let response = try await transport.send(
                server.request("/slow-body?chunks=16&delayMs=300"), body: nil, options: options)
            #expect(response.body.count == 1600)
        }
    }

    @Test func aStreamWhoseConsumerLagsIsNotIdle() async throws {
        try await withLoopback(
            configuration: {
                var c = CurlTransport.Configuration()
                c.streamBufferSize = 16 << 10
                return c
            }()
        ) {
            server, transport in
            var options = TransferOptions()
            options.idleTimeout = .seconds(1)
            let streamed = try await transport.stream(
                server.request("/stream?count=64&size=4096"), body: nil, options: options)
            var total = 0
            var iterator = streamed.body.makeAsyncIterator()
            while let chunk = try await iterator.next() {
                if total == 0 { try await Task.sleep(for: .milliseconds(2500)) }  // the transfer is paused meanwhile
                total += chunk.count
            }
            #expect(total == 64 * 4096)
        }
    }

    @Test func aLowSpeedLimitAppliesWithoutAnIdleLimit() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.idleTimeout = nil
            options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1_000, duration: .seconds(1))
            let error = await serviceError {
                _ = try await transport.send(
                    server.request("/slow-body?chunks=8&delayMs=300"), body: nil, options: options)
            }
            #expect(error?.code == .timedOut)
        }
    }
}
