#if PostgreSQL
import CourierCaching
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A clock whose sleeps never end within a test (until cancelled): a load on it cannot poll,
/// so only a notification can move it.
private struct StalledClock: Clock {
    typealias Instant = ContinuousClock.Instant
    var now: Instant { .now }
    var minimumResolution: Duration { .nanoseconds(1) }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await Task.sleep(for: .seconds(3_600))
    }
}

/// `/gate?name=` of the test server, cached for a minute in the shared tier only, collapsed
/// across the fleet with a minute's wait.
private struct FleetGateResource: Resource {
    typealias Response = Data
    var baseURL: String
    var name: String
    var endpoint: Endpoint { Endpoint(baseURL, path: "/gate", query: ["name": name]) }
    var cachePolicy: CachePolicy {
        CachePolicy.cacheElseNetwork(maxAge: .seconds(60), tiers: .shared)
            .collapsingAcrossFleet(wait: .seconds(60), lease: .seconds(60))
    }
}

@Suite("PostgreSQL lease notifications", postgresAvailable)
struct PostgresLeaseNotificationTests {
    /// A coordinator of one "process": its own store (pool), the shared tier only, on `clock`.
    static func coordinator(_ store: PostgresCacheStore, clock: any Clock<Duration>) -> RequestCoordinator {
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        configuration.clock = clock
        return RequestCoordinator(transport: CurlTransport(), configuration: configuration)
    }

    /// Waits (up to 30 s) until `store` listens and `watches` loads wait on a lease (each has
    /// tried to take it).
    static func waitUntilWatching(_ store: PostgresCacheStore, watches: Int) async -> Bool {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(30) {
            if store.notifications.isListening, store.notifications.waitingCount == watches { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    static func names(_ events: AsyncStream<CoordinatorEvent>) async -> [String] {
        var names: [String] = []
        for await event in events {
            if let cache = event.kind.cacheEvent { names.append("\(cache.name)") }
        }
        return names
    }

    @Test("the holder's release wakes a waiting process, which cannot poll, and it reads the entry")
    func storedWakesWaiters() async throws {
        try await withPostgresStore { cluster, holderStore in
            try await holderStore.prepare()
            try await withRunningStore(on: cluster) { waiterStore in
                try await withTestServer { server in
                    let holder = Self.coordinator(holderStore, clock: ContinuousClock())
                    let waiter = Self.coordinator(waiterStore, clock: StalledClock())
                    let resource = FleetGateResource(baseURL: server.baseURL, name: "notified")
                    let events = waiter.events(bufferingNewest: 100)
                    let held = Task { try await resource.loadResponse(using: holder) }
                    #expect(await server.waitUntilHeld("notified", count: 1))
                    let waited = Task { try await resource.loadResponse(using: waiter) }
                    // Bounded: a load no notification reaches waits for the stalled clock.
                    let timeout = Task {
                        try await Task.sleep(for: .seconds(30))
                        waited.cancel()
                    }
                    defer { timeout.cancel() }
                    #expect(await Self.waitUntilWatching(waiterStore, watches: 1))
                    server.openGate("notified")
                    let first = try await held.value
                    let second = try await waited.value
                    #expect(first.source == .network && second.source == .shared)
                    #expect(first.value == second.value)
                    #expect(server.gateCounts("notified").served == 1)
                    #expect(waiterStore.notifications.watchCount == 0)
                    await holder.shutdown()
                    await waiter.shutdown()
                    let names = await Self.names(events)
                    #expect(names.contains("leaseWaited") && !names.contains("leaseTaken"), "\(names)")
                }
            }
        }
    }

    @Test("a holder that stores nothing sends every waiting process to the origin at once")
    func notStoredReleasesEveryWaiter() async throws {
        try await withPostgresStore { cluster, holderStore in
            try await holderStore.prepare()
            try await withRunningStore(on: cluster) { firstStore in
                try await withRunningStore(on: cluster) { secondStore in
                    try await withTestServer { server in
                        let holder = Self.coordinator(holderStore, clock: ContinuousClock())
                        let waiters = [firstStore, secondStore].map { Self.coordinator($0, clock: StalledClock()) }
                        let resource = FleetGateResource(baseURL: server.baseURL, name: "unstored")
                        let events = waiters.map { $0.events(bufferingNewest: 100) }
                        let held = Task { try await resource.loadResponse(using: holder) }
                        #expect(await server.waitUntilHeld("unstored", count: 1))
                        let waited = waiters.map { waiter in Task { try await resource.loadResponse(using: waiter) } }
                        // Bounded: loads no notification reaches wait for the stalled clock.
                        let timeout = Task {
                            try await Task.sleep(for: .seconds(30))
                            for load in waited { load.cancel() }
                        }
                        defer { timeout.cancel() }
                        #expect(await Self.waitUntilWatching(firstStore, watches: 1))
                        #expect(await Self.waitUntilWatching(secondStore, watches: 1))
                        // The holder's fetch is cancelled: it gives the lease back with nothing stored.
                        held.cancel()
                        await #expect(throws: ServiceError.self) { try await held.value }
                        // Both go to the origin at once, where the gate holds them (they cannot poll).
                        #expect(await server.waitUntilHeld("unstored", count: 2, timeout: .seconds(40)))
                        server.openGate("unstored")
                        for load in waited {
                            let loaded = try await load.value
                            #expect(loaded.source == .network)
                        }
                        await holder.shutdown()
                        for (waiter, stream) in zip(waiters, events) {
                            await waiter.shutdown()
                            let names = await Self.names(stream)
                            #expect(names.contains("leaseReleasedUnstored"), "\(names)")
                        }
                        let leases = try await cluster.psql("SELECT count(*) FROM courier_cache_leases")
                        #expect(leases == "0")
                    }
                }
            }
        }
    }

    @Test("a malformed notification is ignored; a well-formed one for another key wakes nobody")
    func malformedNotifications() async throws {
        let notifications = LeaseNotifications()
        let watch = notifications.watch(String(repeating: "a", count: 64))
        for payload in [
            "", "lease", "lease abc stored", "lease \(String(repeating: "a", count: 64)) maybe",
            "purge \(String(repeating: "a", count: 64)) stored", "lease \(String(repeating: "b", count: 64)) stored",
        ] {
            PostgresCacheStore.deliver(payload, to: notifications, logger: nil)
        }
        #expect(await watch.next(within: .milliseconds(50), on: ContinuousClock()) == nil)
        PostgresCacheStore.deliver(
            "lease \(String(repeating: "a", count: 64)) notStored", to: notifications, logger: nil)
        #expect(await watch.next() == .notStored)
    }
}
#endif
