import CourierServices
import CourierTestServer
import Foundation
import InMemoryTracing
import Testing
import Tracing

@testable import CourierServices

/// `GET <base><path>`, whatever it answers, as bytes.
struct TelemetryProbe: Resource {
    typealias Response = Data
    var base: String
    var path: String
    var query: KeyValuePairs<String, String> = [:]
    var retryPolicy: RetryPolicy? = RetryPolicy.none
    var endpoint: Endpoint { Endpoint(base, path: path, query: query) }
}

@Suite("Tracing")
struct TracingTests {
    func configuration(_ tracer: W3CTestTracer, clock: RecordingClock = RecordingClock())
        -> RequestCoordinator.Configuration
    {
        var configuration = RequestCoordinator.Configuration()
        configuration.tracer = tracer
        configuration.clock = clock
        return configuration
    }

    @Test("a 200 makes one client span named by its method, with the HTTP client attributes")
    func success() async throws {
        let tracer = W3CTestTracer()
        try await withCoordinator(configuration: configuration(tracer)) { server, coordinator in
            _ = try await coordinator.load(
                TelemetryProbe(base: server.baseURL, path: "/status/200", query: ["token": "secret"]))
            let spans = tracer.clientSpans
            try #require(spans.count == 1)
            let span = spans[0]
            #expect(span.operationName == "GET")
            #expect(span.kind == .client)
            #expect(span.parentSpanID == nil)
            let port = try #require(URL(string: server.baseURL)?.port)
            #expect(span.attributes.get("http.request.method") == .string("GET"))
            #expect(span.attributes.get("url.full") == .string("\(server.baseURL)/status/200"))
            #expect(span.attributes.get("server.address") == .string("127.0.0.1"))
            #expect(span.attributes.get("server.port") == .int64(Int64(port)))
            #expect(span.attributes.get("http.response.status_code") == .int64(200))
            #expect(span.attributes.get("courier.cache.source") == .string("network"))
            #expect(span.attributes.get("courier.coalesced") == .bool(false))
            #expect(span.attributes.get("error.type") == nil)
            #expect(span.attributes.get("http.request.resend_count") == nil)
            #expect(span.status?.code != .error)
            // The context went out as a W3C traceparent, after the decorators.
            let sent = server.requests(to: "/status/200").first?.header("traceparent")
            #expect(sent == W3CTestTracer.traceparent(span.spanContext))
        }
    }

    @Test("without a tracer (the global no-op), requests carry no trace context")
    func noTracer() async throws {
        try await withCoordinator { server, coordinator in
            _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/200"))
            let fields = try #require(server.requests(to: "/status/200").first)
            #expect(fields.header("traceparent") == nil)
        }
    }

    @Test("a 404 the resource does not accept ends the span with error.type unacceptableStatus")
    func unacceptableStatus() async throws {
        let tracer = W3CTestTracer()
        try await withCoordinator(configuration: configuration(tracer)) { server, coordinator in
            let error = await serviceError {
                _ = try await coordinator.load(TelemetryProbe(base: server.baseURL, path: "/status/404"))
            }
            #expect(error?.code == .unacceptableStatus)
            let span = try #require(tracer.clientSpans.first)
            #expect(span.attributes.get("http.response.status_code") == .int64(404))
            #expect(span.attributes.get("error.type") == .string("unacceptableStatus"))
            #expect(span.status?.code == .error)
            #expect(span.errors.count == 1)
        }
    }

    @Test("a refused connection ends the span with error.type cannotConnect and no status")
    func transportFailure() async throws {
        let tracer = W3CTestTracer()
        let server = try await TestServer.start()
        let base = server.baseURL
        await server.stop()  // nothing listens on this port any more
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration(tracer))
        let error = await serviceError {
            _ = try await coordinator.load(TelemetryProbe(base: base, path: "/status/200"))
        }
        await transport.shutdown()
        #expect(error?.code == .cannotConnect)
        let span = try #require(tracer.clientSpans.first)
        #expect(span.operationName == "GET")
        #expect(span.attributes.get("error.type") == .string("cannotConnect"))
        #expect(span.attributes.get("http.response.status_code") == nil)
        #expect(span.status?.code == .error)
    }

    @Test("identical loads from two traces still share one request, sent with the first's context")
    func coalescesAcrossTraces() async throws {
        let tracer = W3CTestTracer()
        var configuration = configuration(tracer)
        // Even with traceparent part of the coalescing identity: it is injected after the key.
        configuration.headersIgnoredForCoalescing = []
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "traced")
            let parents = [tracer.startSpan("one", context: .topLevel), tracer.startSpan("two", context: .topLevel)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for parent in parents {
                    group.addTask {
                        try await ServiceContext.$current.withValue(parent.context) {
                            _ = try await resource.load(using: coordinator)
                        }
                    }
                }
                await coordinator.waitForWaiters(2)
                server.openGate("traced")
                try await group.waitForAll()
            }
            for parent in parents { parent.end() }
            #expect(server.requests(to: "/gate").count == 1)
            let loads = tracer.clientSpans
            try #require(loads.count == 2)
            // Each load's span belongs to its caller's trace.
            #expect(Set(loads.map(\.traceID)) == Set(parents.map(\.traceID)))
            #expect(Set(loads.compactMap(\.parentSpanID)) == Set(parents.map(\.spanID)))
            let leader = try #require(loads.first { $0.attributes.get("courier.coalesced") == .bool(false) })
            #expect(loads.filter { $0.attributes.get("courier.coalesced") == .bool(true) }.count == 1)
            let sent = server.requests(to: "/gate").first?.header("traceparent")
            #expect(sent == W3CTestTracer.traceparent(leader.spanContext))
        }
    }

    @Test("a retry after a 503 gets a child span, its own traceparent and the resend count")
    func retry() async throws {
        let tracer = W3CTestTracer()
        let clock = RecordingClock()
        try await withCoordinator(configuration: configuration(tracer, clock: clock)) { server, coordinator in
            let probe = TelemetryProbe(
                base: server.baseURL, path: "/flaky",
                query: ["key": "traced", "failures": "1", "status": "503", "retryAfter": "0"],
                retryPolicy: nil)
            _ = try await coordinator.load(probe)
            let spans = tracer.clientSpans
            try #require(spans.count == 2)
            let load = try #require(spans.first { $0.parentSpanID == nil })
            let retry = try #require(spans.first { $0.parentSpanID == load.spanID })
            #expect(load.attributes.get("http.request.resend_count") == .int64(1))
            #expect(load.attributes.get("http.response.status_code") == .int64(200))
            #expect(retry.operationName == "GET")
            #expect(retry.attributes.get("http.request.resend_count") == .int64(1))
            #expect(retry.attributes.get("http.response.status_code") == .int64(200))
            #expect(retry.traceID == load.traceID)
            let sent = server.requests(to: "/flaky").map { $0.header("traceparent") }
            #expect(
                sent == [W3CTestTracer.traceparent(load.spanContext), W3CTestTracer.traceparent(retry.spanContext)])
        }
    }

    @Test("a stale-while-revalidate refresh gets a background span, a child of the load that served stale")
    func backgroundRefresh() async throws {
        let tracer = W3CTestTracer()
        let clock = WallClock()
        var configuration = configuration(tracer)
        configuration.now = { clock.now }
        configuration.cache = TieredCache(now: { clock.now })
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let events = coordinator.events()
            let resource = CachedResource(
                baseURL: server.baseURL, key: "traced-swr",
                query: ["cc": "max-age=1, stale-while-revalidate=300", "date": "none"])
            _ = try await resource.load(using: coordinator)
            clock.advance(10)
            let stale = try await resource.loadResponse(using: coordinator)
            #expect(stale.isStale)
            // Three loads end: the first, the stale one and its refresh (spans end before the event).
            var ended = 0
            for await event in events {
                if event.kind.name == .finished { ended += 1 }
                if ended == 3 { break }
            }
            let spans = tracer.clientSpans
            try #require(spans.count == 3)
            let served = try #require(spans.first { $0.attributes.get("courier.cache.source") == .string("memory") })
            let refresh = try #require(spans.first { $0.attributes.get("courier.background") == .bool(true) })
            #expect(refresh.parentSpanID == served.spanID)
            #expect(refresh.traceID == served.traceID)
            #expect(served.parentSpanID == nil)
            #expect(server.cacheCounts("traced-swr").requests == 2)
        }
    }
}
