import CourierCaching
import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import InMemoryTracing
import MetricsTestKit
import Testing
import Tracing

/// `/gate?name=` through a cache policy that collapses across the fleet.
struct FleetResource: Resource {
    typealias Response = Gate
    var baseURL: String
    var name: String
    var cachePolicy: CachePolicy
    var endpoint: Endpoint { Endpoint(baseURL, path: "/gate", query: ["name": name]) }
}

/// Two "processes": coordinators with their own transport and memory tier, sharing `store`.
/// `clocks[i]` (nil: the real clock) is what coordinator `i` waits on.
func withFleet<T>(
    store: LeasingTestStore, clocks: [(any Clock<Duration>)?] = [nil, nil], metrics: TestMetrics? = nil,
    tracer: W3CTestTracer? = nil,
    _ body: (TestServer, [RequestCoordinator]) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    var members: [(CurlTransport, RequestCoordinator)] = []
    for clock in clocks {
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        if let clock { configuration.clock = clock }
        if let metrics { configuration.metricsFactory = metrics }
        if let tracer { configuration.tracer = tracer }
        let transport = CurlTransport()
        members.append((transport, RequestCoordinator(transport: transport, configuration: configuration)))
    }
    func stop(cancelling: Bool) async {
        for (transport, coordinator) in members {
            await coordinator.shutdown(cancellingInFlight: cancelling)
            await transport.shutdown(cancellingInFlight: cancelling)
        }
        await server.stop()
    }
    do {
        let result = try await body(server, members.map(\.1))
        await stop(cancelling: false)
        return result
    } catch {
        await stop(cancelling: true)
        throw error
    }
}

/// The cache events of `stream` up to its end.
func cacheEvents(_ stream: AsyncStream<CoordinatorEvent>) async -> [CacheEvent] {
    var events: [CacheEvent] = []
    for await event in stream {
        if let cache = event.kind.cacheEvent { events.append(cache) }
    }
    return events
}

extension [CacheEvent] {
    /// How many of these events are `name` (in `tier`, when one is given).
    func count(_ name: CacheEvent.Name, in tier: CacheTier? = nil) -> Int {
        count { $0.name == name && (tier == nil || $0.tier == tier) }
    }
}

@Suite("Fleet-wide collapsing")
struct FleetCollapsingTests {
    static let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(600))

    @Test("two processes, four loads of a cold URL: one lease, one origin request; the waiter serves the shared entry")
    func oneOriginRequest() async throws {
        let store = LeasingTestStore()
        let metrics = TestMetrics()
        let tracer = W3CTestTracer()
        try await withFleet(store: store, metrics: metrics, tracer: tracer) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-once",
                cachePolicy: Self.policy.collapsingAcrossFleet(wait: .seconds(60), lease: .seconds(60)))
            let (eventsA, eventsB) = (fleet[0].events(), fleet[1].events())
            let joins = fleet[0].events()
            let loadsA = (0..<3).map { _ in Task { try await fleet[0].load(resource) } }
            #expect(await server.waitUntilHeld("fleet-once", count: 1))
            // The other two joined the lease holder's transfer.
            #expect(await waitForEvents(2, .coalesced, in: joins))
            let loadB = Task { try await fleet[1].load(resource) }
            #expect(await store.refusals.wait(until: 1, timeout: .seconds(60)))  // B waits for A's entry
            server.openGate("fleet-once")
            var a: [Loaded<Gate>] = []
            for load in loadsA { a.append(try await load.value) }
            let b = try await loadB.value
            #expect(server.gateCounts("fleet-once").served == 1)
            #expect(a.allSatisfy { $0.source == .network && $0.value.served == 1 })
            #expect(a.filter(\.wasCoalesced).count == 2)
            #expect(b.source == .shared && b.value.served == 1)
            #expect(await store.granted == 1)
            #expect(await store.released == 1)
            // Served from the shared tier, B's own memory tier has it now.
            let loaded1 = try await fleet[1].load(resource)
            #expect(loaded1.source == .memory)
            await fleet[0].shutdown()
            await fleet[1].shutdown()
            let (cacheA, cacheB) = (await cacheEvents(eventsA), await cacheEvents(eventsB))
            #expect(cacheA.count(.leaseTaken) == 1)
            #expect(cacheA.count(.stored, in: .shared) > 0)
            #expect(cacheB.count(.leaseWaited) > 0 && cacheB.count(.hit, in: .shared) > 0)
            #expect(cacheB.count(.leaseTaken) == 0)
        }
        let spans = tracer.clientSpans
        let fleetSpans = spans.filter { $0.attributes.get("courier.cache.fleet") != nil }
        #expect(fleetSpans.count == 2)
        for (outcome, source) in [("leaseTaken", "network"), ("leaseWaited", "shared")] {
            #expect(
                fleetSpans.contains {
                    $0.attributes.get("courier.cache.fleet") == .string(outcome)
                        && $0.attributes.get("courier.cache.source") == .string(source)
                })
        }
        let outcome = { metrics.counterTotal(label: "courier.cache.fleet", dimensions: [("outcome", $0)]) }
        #expect(outcome("leaseTaken") == 1 && outcome("leaseWaited") == 1 && outcome("leaseWaitTimedOut") == 0)
        #expect(
            metrics.counterTotal(label: "courier.cache.lookups", dimensions: [("result", "hit"), ("source", "shared")])
                == 1)
    }

    @Test("a part in the shared tier (a 206) never answers a plain load, nor ends a fleet wait")
    func partsNeverAnswerPlainLoads() async throws {
        let store = LeasingTestStore()
        try await withFleet(store: store) { server, fleet in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "fleet-part", query: ["cc": "max-age=600", "etag": "1"],
                cachePolicy: .http().collapsingAcrossFleet(wait: .seconds(5), lease: .seconds(30)))
            // What another writer (or another version) might have left there.
            let now = Date()
            let part = CachedResponse(
                status: .partialContent,
                headerFields: [.eTag: "\"v1\"", .contentRange: "bytes 0-3/100", .cacheControl: "max-age=600"],
                body: Data("abcd".utf8), requestTime: now, responseTime: now)
            try await store.store(part, for: CacheKey("GET \(resource.endpoint)"))
            let loaded = try await resource.loadResponse(using: fleet[0])
            #expect(loaded.source == .network && loaded.response.status.code == 200 && loaded.value.count > 4)
            #expect(server.cacheCounts("fleet-part").requests == 1)
        }
    }

    @Test("a holder that stores nothing within the wait: the waiter fetches itself (injected clock)")
    func waitRunsOut() async throws {
        let clock = ImmediateTestClock()
        let store = LeasingTestStore(clock: clock)
        try await withFleet(store: store, clocks: [nil, clock]) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-slow",
                cachePolicy: Self.policy.collapsingAcrossFleet(wait: .seconds(5), lease: .seconds(30)))
            let eventsB = fleet[1].events()
            let loadA = Task { try await fleet[0].load(resource) }
            #expect(await server.waitUntilHeld("fleet-slow", count: 1))
            let loadB = Task { try await fleet[1].load(resource) }
            #expect(await server.waitUntilHeld("fleet-slow", count: 2))  // B gave up waiting and fetched
            server.openGate("fleet-slow")
            _ = try await loadA.value
            #expect(try await loadB.value.source == .network)
            #expect(server.gateCounts("fleet-slow").served == 2)
            // The store's calls (in memory: microseconds) count towards the wait too.
            let slept = clock.sleeps.reduce(.zero, +)
            #expect(slept <= .seconds(5) && slept > .seconds(4))
            #expect(clock.sleeps.allSatisfy { $0 <= .milliseconds(250) })
            #expect(await store.granted == 1)
            await fleet[1].shutdown()
            let cacheB = await cacheEvents(eventsB)
            #expect(cacheB.count(.leaseWaitTimedOut) > 0 && cacheB.count(.leaseTaken) == 0)
        }
    }

    @Test("a slow store's calls count towards the wait: it does not stretch to several times its bound")
    func slowStoreCallsCountTowardsTheWait() async throws {
        let clock = ImmediateTestClock()
        let store = LeasingTestStore(clock: clock)
        try await withFleet(store: store, clocks: [nil, clock]) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-slow-store",
                cachePolicy: Self.policy.collapsingAcrossFleet(wait: .seconds(1), lease: .seconds(30)))
            let loadA = Task { try await fleet[0].load(resource) }
            #expect(await server.waitUntilHeld("fleet-slow-store", count: 1))
            // Each lookup and lease request now takes at least 200 ms of real time, and B's
            // pauses take none (its clock is immediate): only the calls can use up its wait.
            await store.setLatency(.milliseconds(200))
            let loadB = Task { try await fleet[1].load(resource) }
            #expect(await server.waitUntilHeld("fleet-slow-store", count: 2))  // B gave up and fetched
            server.openGate("fleet-slow-store")
            _ = try await loadA.value
            #expect(try await loadB.value.source == .network)
            // A 1 s wait holds at most 3 rounds of 200 to 400 ms (counting only the pauses, B would
            // have asked for the lease about 9 times, over 3 s).
            #expect(store.refusals.count <= 3)
        }
    }

    @Test("a lease whose holder never gives it back expires; the waiter takes it (injected clock)")
    func leaseExpires() async throws {
        let clock = ImmediateTestClock()
        let store = LeasingTestStore(clock: clock)
        try await withFleet(store: store, clocks: [nil, clock]) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-expiry",
                cachePolicy: Self.policy.collapsingAcrossFleet(wait: .seconds(60), lease: .seconds(2)))
            let eventsB = fleet[1].events()
            let loadA = Task { try await fleet[0].load(resource) }
            #expect(await server.waitUntilHeld("fleet-expiry", count: 1))
            let loadB = Task { try await fleet[1].load(resource) }
            #expect(await server.waitUntilHeld("fleet-expiry", count: 2))
            let waited = clock.sleeps.reduce(.zero, +)
            #expect(waited >= .seconds(2) && waited < .seconds(3))
            server.openGate("fleet-expiry")
            _ = try await loadA.value
            _ = try await loadB.value
            #expect(await store.granted == 2)
            #expect(await store.released == 1)  // A's late release leaves B's lease alone
            await fleet[1].shutdown()
            let cacheB = await cacheEvents(eventsB)
            #expect(cacheB.count(.leaseTaken) > 0 && cacheB.count(.leaseWaitTimedOut) == 0)
        }
    }

    @Test("a cancelled holder gives its lease back; the waiter takes it and fetches")
    func holderCancelled() async throws {
        let store = LeasingTestStore()
        try await withFleet(store: store) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-cancel",
                cachePolicy: Self.policy.collapsingAcrossFleet(wait: .seconds(60), lease: .seconds(60)))
            let loadA = Task { try await fleet[0].load(resource) }
            #expect(await server.waitUntilHeld("fleet-cancel", count: 1))
            let loadB = Task { try await fleet[1].load(resource) }
            #expect(await store.refusals.wait(until: 1, timeout: .seconds(60)))
            loadA.cancel()
            let error = await serviceError { _ = try await loadA.value }
            #expect(error?.code == .cancelled)
            #expect(await store.released == 1)
            server.openGate("fleet-cancel")
            let b = try await loadB.value
            #expect(b.source == .network)
            #expect(await store.granted == 2)
        }
    }

    @Test("a leasing store that throws never fails a load: storeFailed events name the shared tier")
    func failingStore() async throws {
        let policy = Self.policy.collapsingAcrossFleet()
        #expect(policy.fleetCollapsing == FleetCollapsing(wait: .seconds(5), lease: .seconds(10)))
        #expect(
            "\(policy)"
                == "cacheElseNetwork(maxAge: 600.0 seconds).collapsingAcrossFleet(wait: 5.0 seconds, lease: 10.0 seconds)"
        )
        #expect(Self.policy.fleetCollapsing == nil && policy != Self.policy)
        let store = LeasingTestStore()
        await store.setFailing(true)
        let metrics = TestMetrics()
        try await withFleet(store: store, clocks: [nil], metrics: metrics) { server, fleet in
            server.openGate("fleet-broken")
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-broken", cachePolicy: policy)
            let events = fleet[0].events()
            let loaded2 = try await fleet[0].load(resource)
            #expect(loaded2.source == .network)
            let loaded3 = try await fleet[0].load(resource)
            #expect(loaded3.source == .memory)
            await fleet[0].shutdown()
            // The lookup, the lease and the store each failed once.
            #expect(await cacheEvents(events).count(.storeFailed, in: .shared) == 3)
        }
        #expect(metrics.counterTotal(label: "courier.cache.fleet", dimensions: [("outcome", "storeFailed")]) == 1)
        // Every failed call of the store: the lookup, the lease and the store.
        #expect(metrics.counterTotal(label: "courier.cache.store_failures", dimensions: [("tier", "shared")]) == 3)
        #expect(
            metrics.counterTotal(label: "courier.cache.lookups", dimensions: [("result", "hit"), ("source", "memory")])
                == 1)
    }
}
