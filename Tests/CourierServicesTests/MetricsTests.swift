import CourierServices
import CourierTestServer
import Foundation
import MetricsTestKit
import Testing

@testable import CourierServices

@Suite("Metrics")
struct MetricsTests {
    func configuration(_ metrics: TestMetrics, clock: RecordingClock = RecordingClock())
        -> RequestCoordinator.Configuration
    {
        var configuration = RequestCoordinator.Configuration()
        configuration.metricsFactory = metrics
        configuration.clock = clock
        return configuration
    }

    func requests(_ metrics: TestMetrics, status: String, error: String) -> Int64 {
        metrics.counterTotal(
            label: "courier.requests", dimensions: [("method", "GET"), ("status_class", status), ("error", error)])
    }

    @Test("loads are counted by method, status class and error code, and timed")
    func requestDimensions() async throws {
        let metrics = TestMetrics()
        try await withCoordinator(configuration: configuration(metrics)) { server, coordinator in
            _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/200"))
            _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/204"))
            _ = await serviceError {
                _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/404"))
            }
            _ = await serviceError {
                _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/502"))
            }
        }
        #expect(requests(metrics, status: "2xx", error: "none") == 2)
        #expect(requests(metrics, status: "4xx", error: "unacceptableStatus") == 1)
        #expect(requests(metrics, status: "5xx", error: "unacceptableStatus") == 1)
        #expect(metrics.counterTotal(label: "courier.requests") == 4)
        let timer = try metrics.expectTimer("courier.request.duration", [("method", "GET")])
        #expect(timer.values.count == 4)
        #expect(timer.values.allSatisfy { $0 > 0 })
    }

    @Test("a transport failure is counted with its error code and no status class")
    func transportFailure() async throws {
        let metrics = TestMetrics()
        let server = try await TestServer.start()
        let base = server.baseURL
        await server.stop()  // nothing listens on this port any more
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration(metrics))
        _ = await serviceError { _ = try await coordinator.load(TelemetryProbe(base: base, path: "/status/200")) }
        await transport.shutdown()
        #expect(requests(metrics, status: "none", error: "cannotConnect") == 1)
        #expect(metrics.counterTotal(label: "courier.retries") == 0)
    }

    @Test("retries are counted")
    func retries() async throws {
        let metrics = TestMetrics()
        try await withCoordinator(configuration: configuration(metrics)) { server, coordinator in
            let probe = TelemetryProbe(
                base: server.baseURL, path: "/flaky", query: ["key": "metrics", "failures": "2", "retryAfter": "0"],
                retryPolicy: RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(1), jitter: 0))
            _ = try await coordinator.load(probe)
        }
        #expect(metrics.counterTotal(label: "courier.retries", dimensions: [("method", "GET")]) == 2)
        #expect(requests(metrics, status: "2xx", error: "none") == 1)
    }

    @Test("loads that join a transfer in flight are counted as coalesced")
    func coalesced() async throws {
        let metrics = TestMetrics()
        try await withCoordinator(configuration: configuration(metrics)) { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "metrics")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 { group.addTask { _ = try await resource.load(using: coordinator) } }
                await coordinator.waitForWaiters(3)
                server.openGate("metrics")
                try await group.waitForAll()
            }
            #expect(server.requests(to: "/gate").count == 1)
        }
        #expect(metrics.counterTotal(label: "courier.coalesced", dimensions: [("method", "GET")]) == 2)
        #expect(requests(metrics, status: "2xx", error: "none") == 3)
    }

    @Test("cache lookups are counted as hits and misses by source")
    func cacheLookups() async throws {
        struct Cached: Resource {
            typealias Response = Gate
            var base: String
            var endpoint: Endpoint { Endpoint(base, path: "/gate", query: ["name": "cached"]) }
            var cachePolicy: CachePolicy { .cacheElseNetwork(maxAge: .seconds(300)) }
        }
        let metrics = TestMetrics()
        try await withCoordinator(configuration: configuration(metrics)) { server, coordinator in
            server.openGate("cached")
            let first = try await coordinator.load(Cached(base: server.baseURL))
            let second = try await coordinator.load(Cached(base: server.baseURL))
            #expect(first.source == .network && second.source == .memory)
            _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/200"))  // network only
        }
        #expect(
            metrics.counterTotal(
                label: "courier.cache.lookups", dimensions: [("result", "miss"), ("source", "network")]) == 1)
        #expect(
            metrics.counterTotal(label: "courier.cache.lookups", dimensions: [("result", "hit"), ("source", "memory")])
                == 1)
        #expect(metrics.counterTotal(label: "courier.cache.lookups") == 2)
    }
}
