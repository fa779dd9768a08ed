import CourierCaching
import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A shared tier that notifies lease releases, as `PostgresCacheStore` does, whose reads the
/// test can hold at a gate: a read that a release overtakes.
actor NotifyingLeasingStore: CacheLeaseNotifying {
    nonisolated var tier: CacheTier { .shared }
    nonisolated let notifications = LeaseNotifications()
    /// Reads that reached the gate while it was shut.
    nonisolated let heldReads = CountWaiters()
    private var entries: [CacheKey: CachedResponse] = [:]
    /// Whether another process holds every lease.
    private var leaseHeldElsewhere = true
    private(set) var granted = 0
    private var gate: [CheckedContinuation<Void, Never>] = []
    private var gateShut = false

    init() { notifications.setListening(true) }

    func setLeaseHeldElsewhere(_ held: Bool) { leaseHeldElsewhere = held }

    /// Reads wait from now on until ``openGate()``.
    func shutGate() { gateShut = true }

    func openGate() {
        gateShut = false
        for read in gate { read.resume() }
        gate = []
    }

    func entry(for key: CacheKey) async throws -> CachedResponse? {
        if gateShut {
            await withCheckedContinuation {
                gate.append($0)
                heldReads.add()
            }
        }
        return entries[key]
    }

    func store(_ response: CachedResponse, for key: CacheKey) async throws { entries[key] = response }
    func removeEntry(for key: CacheKey) async throws { entries[key] = nil }
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws { entries = [:] }

    func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease? {
        guard !leaseHeldElsewhere else { return nil }
        granted += 1
        return CacheLease(key: key, token: "lease-\(granted)")
    }

    func releaseLease(_ lease: CacheLease) async throws {}
    func releaseLease(_ lease: CacheLease, answered: Bool) async throws {}

    nonisolated func watchLease(on key: CacheKey) -> LeaseWatch { notifications.watch(key.description) }
}

@Suite("Fleet-wide collapsing: releases that overtake a read")
struct FleetReleaseRaceTests {
    @Test("a notStored release heard while a waiter reads after an entry change sends it to the origin, lease untaken")
    func notStoredDuringTheReadIsNotLost() async throws {
        let store = NotifyingLeasingStore()
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        configuration.clock = StalledClock()  // no poll: only the notifications move the waiter
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-race",
                cachePolicy: CachePolicy.cacheElseNetwork(maxAge: .seconds(600))
                    .collapsingAcrossFleet(wait: .seconds(30), lease: .seconds(30)))
            let key = CacheKey("GET \(resource.endpoint)").description
            server.openGate("fleet-race")
            let events = coordinator.events()
            let load = Task { try await resource.loadResponse(using: coordinator) }
            #expect(await waitUntil { store.notifications.waitingCount == 1 })
            // The holder stores (an entry change): the waiter reads, and its read is held while
            // the holder's answer turns out unstorable and the lease is given back.
            await store.shutGate()
            store.notifications.released(key, .entryChanged)
            #expect(await store.heldReads.wait(until: 1, timeout: .seconds(30)))
            await store.setLeaseHeldElsewhere(false)
            store.notifications.released(key, .notStored)
            await store.openGate()
            let loaded = try await load.value
            #expect(loaded.source == .network && loaded.value.served == 1)
            #expect(await store.granted == 0)  // straight to the origin, not through the lease
            await coordinator.shutdown()
            let cache = await cacheEvents(events)
            #expect(cache.count(.leaseReleasedUnstored) > 0 && cache.count(.leaseTaken) == 0)
        }
    }

    /// Whether `condition` holds within 30 s, checked every millisecond.
    private func waitUntil(_ condition: @Sendable () async -> Bool) async -> Bool {
        for _ in 0..<30_000 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return false
    }
}
