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
    /// The gauge's last value, once it is `expected` (or the last one after 60 s).
    static func gauge(
        _ metrics: TestMetrics, _ label: String, _ dimensions: [(String, String)], becomes expected: Double
    ) async -> Double? {
        let deadline = ContinuousClock.now + .seconds(60)
        var value = try? metrics.expectGauge(label, dimensions).lastValue
        while value != expected, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
            value = try? metrics.expectGauge(label, dimensions).lastValue
        }
        return value
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
        let host = ("host", origin)
        #expect(await Self.gauge(metrics, "courier.host.loads_waiting", [host], becomes: 2) == 2)
        #expect(coordinator.loadsWaitingByHost == [origin: 2])
        let inUse = [("origin", origin), ("state", "in_use"), ("loop", "0")]
        let idle = [("origin", origin), ("state", "idle"), ("loop", "0")]
        #expect(await Self.gauge(metrics, "courier.pool.connections", inUse, becomes: 2) == 2)
        #expect(try metrics.expectGauge("courier.pool.connections", idle).lastValue == 0)
        let running = [("state", "running"), ("loop", "0")]
        #expect(try metrics.expectGauge("courier.pool.transfers", running).lastValue == 2)

        server.openGate("held")
        for load in loads { _ = try await load.value }
        #expect(coordinator.loadsWaitingByHost == [origin: 0])
        #expect(await Self.gauge(metrics, "courier.pool.connections", idle, becomes: 2) == 2)
        #expect(await Self.gauge(metrics, "courier.pool.connections", inUse, becomes: 0) == 0)
        #expect(await Self.gauge(metrics, "courier.host.loads_waiting", [host], becomes: 0) == 0)
        #expect(await Self.gauge(metrics, "courier.pool.transfers", running, becomes: 0) == 0)

        // The connections close with the transport: their series go to 0, and nothing is
        // recorded after the coordinator's shutdown.
        await transport.shutdown()
        #expect(await Self.gauge(metrics, "courier.pool.connections", idle, becomes: 0) == 0)
        await coordinator.shutdown()
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
