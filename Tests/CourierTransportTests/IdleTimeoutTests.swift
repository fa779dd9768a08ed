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
            let started = ContinuousClock.now
            let error = await serviceError { _ = try await transport.send(server.request(route), body: nil, options: options) }
            #expect(error?.code == .timedOut, "\(route): \(String(describing: error))")
            #expect(error?.isRetryable == true)
            // curl averages speed over the last 5 s, so a stall after a few bytes ends up to
            // 5 s past the limit; a sanitizer build on a loaded 2-core machine took 29 s. The
            // point: it ends, and well before the 60 s default limit.
            #expect(ContinuousClock.now - started < .seconds(50))
        }
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
        try await withLoopback(configuration: { var c = CurlTransport.Configuration(); c.streamBufferSize = 16 << 10; return c }()) {
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

    @Test func aLowSpeedLimitReplacesTheIdleLimit() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.idleTimeout = nil
            options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1_000, duration: .seconds(1))
            let error = await serviceError {
                _ = try await transport.send(server.request("/slow-body?chunks=8&delayMs=300"), body: nil, options: options)
            }
            #expect(error?.code == .timedOut)
        }
    }
}
