import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

/// What the upstream protections report: each policy's metric and the attribute it puts on the
/// load's span.
@Suite("Upstream protection telemetry")
struct UpstreamTelemetryTests {
    struct Item: Resource {
        typealias Response = Data
        var path = "/item"
        var hedging: Hedging?
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: path) }
    }

    static func configuration(_ metrics: TestMetrics, _ tracer: W3CTestTracer) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.metricsFactory = metrics
        configuration.tracer = tracer
        configuration.cache = nil
        configuration.retryPolicy = RetryPolicy(initialDelay: .milliseconds(1), jitter: 0)
        return configuration
    }

    @Test("a refused retry and an opened circuit are counted, and the refused load's span says why")
    func budgetAndCircuit() async throws {
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()
        var configuration = Self.configuration(metrics, tracer)
        configuration.retryBudget = RetryBudget(ratio: 0, minimumPerSecond: 0)
        configuration.circuitBreaker = CircuitBreaker(consecutiveFailures: 2, minimumAttempts: 1_000)
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        for _ in 0..<3 { _ = try? await Item().load(using: coordinator) }
        await coordinator.shutdown()
        #expect(mock.requestCount == 2, "two 503s opened the circuit; no retry fit the budget")
        // The first 503's retry found no budget; the second's, an open circuit.
        #expect(
            metrics.counterTotal(
                label: "courier.retries.refused", dimensions: [("method", "GET"), ("reason", "budget")])
                == 1)
        #expect(
            metrics.counterTotal(
                label: "courier.retries.refused", dimensions: [("method", "GET"), ("reason", "circuit")]) == 1)
        #expect(metrics.counterTotal(label: "courier.circuit.transitions", dimensions: [("state", "open")]) == 1)
        #expect(
            metrics.counterTotal(
                label: "courier.requests",
                dimensions: [("method", "GET"), ("status_class", "none"), ("error", "circuitOpen")]) == 1)
        let refused = try #require(tracer.clientSpans.last)
        #expect(refused.attributes.get("courier.circuit") == .string("open"))
    }

    @Test("hedges sent and won are counted, and the load's span says the hedge won")
    func hedges() async throws {
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()
        let (mock, _) = HedgingLoadTests.mock { $0 == 1 ? (.seconds(30), 200) : (.zero, 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration(metrics, tracer))
        _ = try await Item(hedging: Hedging(delay: .fixed(.milliseconds(20)), maximumShare: 1)).load(using: coordinator)
        await coordinator.shutdown()
        #expect(metrics.counterTotal(label: "courier.hedges", dimensions: [("outcome", "sent")]) == 1)
        #expect(metrics.counterTotal(label: "courier.hedges", dimensions: [("outcome", "won")]) == 1)
        let span = try #require(tracer.clientSpans.last)
        #expect(span.attributes.get("courier.hedge") == .string("won"))
    }

    @Test("a host pause is counted, and the paused load's span says so")
    func hostPauses() async throws {
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()
        var configuration = Self.configuration(metrics, tracer)
        configuration.cache = TieredCache(stores: [PausingTestStore()])
        configuration.retryPolicy = .none
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .tooManyRequests(retryAfter: .seconds(30)))
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        for _ in 0..<2 { _ = try? await Item().load(using: coordinator) }
        await coordinator.shutdown()
        #expect(metrics.counterTotal(label: "courier.host.pauses") == 1)
        #expect(
            metrics.counterTotal(
                label: "courier.requests",
                dimensions: [("method", "GET"), ("status_class", "none"), ("error", "hostPaused")]) == 1)
        let paused = try #require(tracer.clientSpans.last)
        #expect(paused.attributes.get("courier.host.paused") == .bool(true))
    }

    @Test("a load its deadline ends is counted by where the deadline came from, and its span says so")
    func deadlines() async throws {
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()
        var configuration = Self.configuration(metrics, tracer)
        configuration.cache = TieredCache()
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let error = await serviceError {
                _ = try await withDeadline(in: .milliseconds(300)) {
                    try await Route(base: server.baseURL, path: "/stall").load(using: coordinator)
                }
            }
            #expect(error?.code == .timedOut)
        }
        #expect(
            metrics.counterTotal(
                label: "courier.deadline.exceeded", dimensions: [("method", "GET"), ("source", "deadline")]) == 1)
        let span = try #require(tracer.clientSpans.last)
        #expect(span.attributes.get("courier.deadline.exceeded") == .string("deadline"))
        guard case .int64(let budget)? = span.attributes.get("courier.deadline.ms") else {
            Issue.record("no courier.deadline.ms on the span")
            return
        }
        #expect(budget > 0 && budget <= 300)
    }

    struct Route: Resource {
        typealias Response = Data
        let base: String
        let path: String
        var endpoint: Endpoint { Endpoint(base, path: path) }
    }
}
