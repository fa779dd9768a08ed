import CourierCore
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import MetricsTestKit
import Testing

/// The pool gauges (`RequestCoordinator.Configuration.poolGaugeInterval`) and
/// `loadsWaitingByHost`, against a loopback server that holds answers at a gate: two loads
/// run (a host limit of 2), two wait for their turn.
@Suite("Pool gauges")
struct PoolGaugesTests {
    typealias Expected = (label: String, dimensions: [(String, String)], value: Double)

    /// Waits until every gauge in `expected` shows its value at once (one reading writes its
    /// gauges one after another); returns those that still differ after 60 s.
    static func gauges(_ metrics: TestMetrics, become expected: [Expected]) async -> [String] {
        func mismatches() -> [String] {
            expected.compactMap { gauge in
                let value = try? metrics.expectGauge(gauge.label, gauge.dimensions).lastValue
                return value == gauge.value ? nil : "\(gauge.label) \(gauge.dimensions): \(String(describing: value))"
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !mismatches().isEmpty, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return mismatches()
    }

    @Test("connections in use and idle, transfers and loads waiting, recorded as they change and 0 once gone")
    func gaugesFollowThePool() async throws {
        let server = try await TestServer.start()
        let metrics = TestMetrics()
        var transportConfiguration = CurlTransport.Configuration()
        transportConfiguration.loops = 1
        let transport = CurlTransport(configuration: transportConfiguration)
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = 2
        configuration.retryPolicy = .none
        configuration.metricsFactory = metrics
        configuration.poolGaugeInterval = .milliseconds(10)
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        // Four different URLs: identical loads would join one transfer.
        let requests = try (0..<4).map {
            try HTTPRequest(method: .get, urlString: "\(server.baseURL)/gate?name=held&n=\($0)")
        }
        let loads = requests.map { request in Task { try await coordinator.send(request).body.count } }
        #expect(await server.waitUntilHeld("held", count: 2))
        let origin = server.baseURL
        let host = [("host", origin)]
        let inUse = [("origin", origin), ("state", "in_use"), ("loop", "0")]
        let idle = [("origin", origin), ("state", "idle"), ("loop", "0")]
        let running = [("state", "running"), ("loop", "0")]
        let waiting = [("state", "waiting"), ("loop", "0")]
        let busy = await Self.gauges(
            metrics,
            become: [
                ("courier.host.loads_waiting", host, 2), ("courier.pool.connections", inUse, 2),
                ("courier.pool.connections", idle, 0), ("courier.pool.transfers", running, 2),
                ("courier.pool.transfers", waiting, 0), ("courier.pool.connecting", [("loop", "0")], 0),
            ])
        #expect(busy.isEmpty, "\(busy)")
        #expect(coordinator.loadsWaitingByHost == [origin: 2])

        server.openGate("held")
        for load in loads { _ = try await load.value }
        #expect(coordinator.loadsWaitingByHost == [origin: 0])
        let quiet = await Self.gauges(
            metrics,
            become: [
                ("courier.host.loads_waiting", host, 0), ("courier.pool.connections", inUse, 0),
                ("courier.pool.connections", idle, 2), ("courier.pool.transfers", running, 0),
            ])
        #expect(quiet.isEmpty, "\(quiet)")

        // The connections close with the transport: their series go to 0.
        await transport.shutdown()
        let closed = await Self.gauges(metrics, become: [("courier.pool.connections", idle, 0)])
        #expect(closed.isEmpty, "\(closed)")
        // Shutdown stops the readings and leaves every series at 0.
        #expect(try metrics.expectGauge("courier.host.loads_waiting", host).lastValue == 0)
        await coordinator.shutdown()
        #expect(try metrics.expectGauge("courier.host.loads_waiting", host).lastValue == 0)
        let recorded = try metrics.expectGauge("courier.pool.connections", idle).values.count
        try await Task.sleep(for: .milliseconds(100))
        #expect(try metrics.expectGauge("courier.pool.connections", idle).values.count == recorded)
        await server.stop()
    }

    @Test("no interval, no gauges; loads waiting are still there to read")
    func offByDefault() async throws {
        let server = try await TestServer.start()
        let metrics = TestMetrics()
        let transport = CurlTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.metricsFactory = metrics
        #expect(configuration.poolGaugeInterval == nil)
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        _ = try await coordinator.send(try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json"))
        try await Task.sleep(for: .milliseconds(50))
        #expect((try? metrics.expectGauge("courier.pool.transfers", [("state", "running"), ("loop", "0")])) == nil)
        #expect(coordinator.loadsWaitingByHost == [server.baseURL: 0])
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
    }
}
