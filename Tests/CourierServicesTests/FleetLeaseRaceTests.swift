import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// A shared tier where another process holds the lease on the first try, then, just before
/// the waiter's second try, stores the entry and gives the lease back: the interleaving of a
/// holder that finishes between a waiter's poll and its next lease request.
actor RacingLeaseStore: CacheLeasing {
    nonisolated var tier: CacheTier { .shared }
    private var entries: [CacheKey: CachedResponse] = [:]
    private let finished: CachedResponse
    private(set) var leaseRequests = 0

    init(finished: CachedResponse) { self.finished = finished }

    func entry(for key: CacheKey) async throws -> CachedResponse? { entries[key] }
    func store(_ response: CachedResponse, for key: CacheKey) async throws { entries[key] = response }
    func removeEntry(for key: CacheKey) async throws { entries[key] = nil }
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws { entries = [:] }

    func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease? {
        leaseRequests += 1
        guard leaseRequests > 1 else { return nil }  // the other process holds it
        entries[key] = finished  // it stored its entry and released the lease, just now
        return CacheLease(key: key, token: "lease-\(leaseRequests)")
    }

    func releaseLease(_ lease: CacheLease) async throws {}
}

@Suite("Fleet-wide collapsing: a holder finishing between polls")
struct FleetLeaseRaceTests {
    @Test("a waiter that gets the lease after the holder stored and left serves the entry, with no origin request")
    func holderFinishedBetweenPollAndLease() async throws {
        let stored = CachedResponse(
            status: .ok, headerFields: [.contentType: "application/json"],
            body: Data(#"{"gate":"race","served":7}"#.utf8), requestTime: Date(), responseTime: Date())
        let store = RacingLeaseStore(finished: stored)
        let server = try await TestServer.start()
        let transport = CurlTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        configuration.clock = ImmediateTestClock()
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        let resource = FleetResource(
            baseURL: server.baseURL, name: "race",
            cachePolicy: CachePolicy.cacheElseNetwork(maxAge: .seconds(600))
                .collapsingAcrossFleet(wait: .seconds(5), lease: .seconds(30)))
        server.openGate("race")
        let events = coordinator.events()
        let loaded = try await coordinator.load(resource)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
        #expect(loaded.source == .shared && loaded.value.served == 7)
        #expect(server.gateCounts("race").served == 0)
        #expect(await store.leaseRequests == 2)
        let cache = await cacheEvents(events)
        #expect(cache.count(.leaseWaited) > 0 && cache.count(.leaseTaken) == 0)
    }
}
