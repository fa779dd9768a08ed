#if PostgreSQL
import CourierCaching
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import HTTPTypes
import PostgresNIO
import Synchronization
import Testing

/// `/gate?name=` of the test server, cached for a minute in the shared tier only, collapsed
/// across the fleet with a minute's wait.
struct FleetGateResource: Resource {
    typealias Response = Data
    var baseURL: String
    var name: String
    var cacheControl: String?
    var endpoint: Endpoint {
        Endpoint(
            baseURL, path: "/gate",
            query: [URLQueryItem(name: "name", value: name)]
                + (cacheControl.map { [URLQueryItem(name: "cc", value: $0)] } ?? []))
    }
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

    /// `resource`'s load by `waiter`, cancelled after 30 s: a load no notification reaches
    /// waits for the stalled clock. Cancel the second task once the load is done.
    static func boundedLoad(
        _ resource: FleetGateResource, using waiter: RequestCoordinator
    ) -> (Task<Loaded<Data>, any Error>, Task<Void, any Error>) {
        let (loads, timeout) = boundedLoads(resource, using: [waiter], within: .seconds(30))
        return (loads[0], timeout)
    }

    /// `resource`'s loads, one by each of `waiters`, cancelled after `limit`. Cancel the second
    /// task once the loads are done.
    static func boundedLoads(
        _ resource: FleetGateResource, using waiters: [RequestCoordinator], within limit: Duration
    ) -> ([Task<Loaded<Data>, any Error>], Task<Void, any Error>) {
        let loads = waiters.map { waiter in Task { try await resource.loadResponse(using: waiter) } }
        let timeout = Task {
            try await Task.sleep(for: limit)
            for load in loads { load.cancel() }
        }
        return (loads, timeout)
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
                    let (waited, timeout) = Self.boundedLoad(resource, using: waiter)
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

    @Test("the holder's store wakes a waiting process, which serves it while the lease is still held")
    func storeWakesWaitersBeforeTheRelease() async throws {
        try await withPostgresStore { cluster, holderStore in
            try await holderStore.prepare()
            try await withRunningStore(on: cluster) { waiterStore in
                try await withTestServer { server in
                    let resource = FleetGateResource(baseURL: server.baseURL, name: "early")
                    let request = HTTPRequest(method: .get, url: URL(string: server.baseURL + "/gate?name=early")!)
                    let key = CacheKey(request: request, credentialHeaders: [])
                    // The holder: another process that took the lease and has not given it back.
                    let lease = try #require(try await holderStore.acquireLease(on: key, for: .seconds(60)))
                    let waiter = Self.coordinator(waiterStore, clock: StalledClock())
                    let (waited, timeout) = Self.boundedLoad(resource, using: waiter)
                    defer { timeout.cancel() }
                    #expect(await Self.waitUntilWatching(waiterStore, watches: 1))
                    let now = Date()
                    let stored = CachedResponse(
                        status: .ok, headerFields: [.contentType: "text/plain"], body: Data("stored early".utf8),
                        requestTime: now, responseTime: now)
                    try await holderStore.store(stored, for: key)
                    let loaded = try await waited.value
                    #expect(loaded.source == .shared && loaded.value == Data("stored early".utf8))
                    #expect(server.gateCounts("early").served == 0)
                    #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_leases") == "1")
                    try await holderStore.releaseLease(lease)
                    await waiter.shutdown()
                }
            }
        }
    }

    @Test("a holder whose answer cannot be stored sends every waiting process to the origin at once")
    func notStoredReleasesEveryWaiter() async throws {
        try await withThreeProcesses(name: "unstored", cacheControl: "no-store") { server, held, waited, events in
            // The holder gets its answer (no-store): both waiters go to the origin at once,
            // where the gate holds them (they cannot poll).
            #expect(server.releaseHeld("unstored") == 1)
            #expect(try await held.value.source == .network)
            #expect(await server.waitUntilHeld("unstored", count: 2, timeout: .seconds(40)))
            server.openGate("unstored")
            for load in waited {
                let loaded = try await load.value
                #expect(loaded.source == .network)
            }
            for names in await events() {
                #expect(names.contains("leaseReleasedUnstored") && !names.contains("leaseTaken"), "\(names)")
            }
            #expect(server.gateCounts("unstored").served == 3)
        }
    }

    @Test("a holder that fails gives the lease to one waiting process, which fetches for the other")
    func failedHandsTheLeaseOn() async throws {
        try await withThreeProcesses(name: "failed", cacheControl: nil) { server, held, waited, events in
            held.cancel()  // no answer: one waiter takes the lease at once
            await #expect(throws: ServiceError.self) { try await held.value }
            // The cancelled holder's request stays at the gate; the new holder's joins it.
            #expect(await server.waitUntilHeld("failed", count: 2, timeout: .seconds(40)))
            server.openGate("failed")
            var sources: [ResponseSource] = []
            for load in waited { sources.append(try await load.value.source) }
            #expect(sources.filter { $0 == .network }.count == 1 && sources.filter { $0 == .shared }.count == 1)
            let names = await events()
            #expect(names.filter { $0.contains("leaseTaken") }.count == 1, "\(names)")
            #expect(names.filter { $0.contains("leaseWaited") }.count == 1, "\(names)")
            #expect(!names.joined().contains("leaseReleasedUnstored"))
        }
    }

    /// A holder on a real clock and two waiting processes that cannot poll, loading
    /// `/gate?name=` (with `cacheControl`): `body` gets the holder's load (held at the gate),
    /// the waiters' loads (each waiting on the lease) and a function that shuts the three down
    /// and returns each waiter's cache events. The waiters are cancelled after 60 s.
    private func withThreeProcesses(
        name: String, cacheControl: String?,
        _ body: (
            TestServer, Task<Loaded<Data>, any Error>, [Task<Loaded<Data>, any Error>], () async -> [[String]]
        ) async throws -> Void
    ) async throws {
        try await withPostgresStore { cluster, holderStore in
            try await holderStore.prepare()
            try await withRunningStore(on: cluster) { firstStore in
                try await withRunningStore(on: cluster) { secondStore in
                    try await withTestServer { server in
                        let holder = Self.coordinator(holderStore, clock: ContinuousClock())
                        let waiters = [firstStore, secondStore].map { Self.coordinator($0, clock: StalledClock()) }
                        let resource = FleetGateResource(
                            baseURL: server.baseURL, name: name, cacheControl: cacheControl)
                        let streams = waiters.map { $0.events(bufferingNewest: 100) }
                        let held = Task { try await resource.loadResponse(using: holder) }
                        #expect(await server.waitUntilHeld(name, count: 1))
                        // Bounded: loads no notification reaches wait for the stalled clock.
                        let (waited, timeout) = Self.boundedLoads(resource, using: waiters, within: .seconds(60))
                        defer { timeout.cancel() }
                        #expect(await Self.waitUntilWatching(firstStore, watches: 1))
                        #expect(await Self.waitUntilWatching(secondStore, watches: 1))
                        try await body(server, held, waited) {
                            await holder.shutdown()
                            var names: [[String]] = []
                            for (waiter, stream) in zip(waiters, streams) {
                                await waiter.shutdown()
                                names.append(await Self.names(stream))
                            }
                            return names
                        }
                        let leases = try await cluster.psql("SELECT count(*) FROM courier_cache_leases")
                        #expect(leases == "0")
                    }
                }
            }
        }
    }

    @Test("the listener stops when the pool stops; a pool of one connection does not listen")
    func listenerLifecycle() async throws {
        let cluster = try await PostgresCluster.start()
        do {
            try await checkListenerLifecycle(cluster)
            await cluster.remove()
        } catch {
            await cluster.remove()
            throw error
        }
    }

    private func checkListenerLifecycle(_ cluster: PostgresCluster) async throws {
        let store = try await withRunningStore(on: cluster) { store in
            _ = try await store.entry(for: CacheKey("GET https://api.example.com/any"))  // the first call
            #expect(await eventually { store.notifications.isListening })
            return store
        }
        #expect(await eventually { !store.hasListener && !store.notifications.isListening })
        var postgres = PostgresClient.Configuration(
            host: "127.0.0.1", port: cluster.port, username: PostgresCluster.superuser, password: nil,
            database: PostgresCluster.database, tls: .disable)
        postgres.options.maximumConnections = 1
        #expect(!PostgresCacheStore(postgres: postgres).listens)
        postgres.options.maximumConnections = 2
        #expect(PostgresCacheStore(postgres: postgres).listens)
        var off = PostgresCacheStore.Configuration()
        off.notifications = false
        #expect(!PostgresCacheStore(postgres: postgres, configuration: off).listens)
        off = PostgresCacheStore.Configuration()
        off.schema = "Not-Plain"
        #expect(!PostgresCacheStore(postgres: postgres, configuration: off).listens)
    }
}

@Suite("PostgreSQL cache notifications, parsed")
struct PostgresNotificationParsingTests {
    @Test("a malformed notification is ignored; a well-formed one for another key wakes nobody")
    func malformedNotifications() async throws {
        let notifications = LeaseNotifications()
        let changes = RemoteChanges()
        let heard = LockedChanges()
        _ = changes.add { heard.append($0) }
        let listening = PostgresCacheStore.Listening(
            notifications: notifications, remoteChanges: changes, instance: "me")
        let digest = String(repeating: "a", count: 64)
        let watch = notifications.watch(digest)
        let key = CacheKey("GET https://api.example.com/a b")
        for payload in [
            "", "lease", "lease abc stored", "lease \(digest) maybe", "purge \(digest) stored",
            "lease \(String(repeating: "b", count: 64)) stored", "entry other", "entry other abc",
            "entry other \(digest) GET https://api.example.com/not-that-digest", "all", "all me", "all me too",
            "entry me \(key.digest) \(key.rawValue)",
        ] {
            PostgresCacheStore.deliver(payload, to: listening)
        }
        #expect(await watch.next(within: .milliseconds(50), on: ContinuousClock()) == nil)
        #expect(heard.all.isEmpty)
        PostgresCacheStore.deliver("lease \(digest) notStored", to: listening)
        #expect(await watch.next(within: .seconds(10), on: ContinuousClock()) == .notStored)
        PostgresCacheStore.deliver("lease \(digest) failed", to: listening)
        #expect(await watch.next(within: .seconds(10), on: ContinuousClock()) == .failed)
        // Another instance's: the key (with its spaces) when it fits, the digest alone when not.
        PostgresCacheStore.deliver("entry other \(key.digest) \(key.rawValue)", to: listening)
        PostgresCacheStore.deliver("entry other \(digest)", to: listening)
        PostgresCacheStore.deliver("all other", to: listening)
        #expect(heard.all == [.entry(digest: key.digest, key: key), .entry(digest: digest, key: nil), .all])
    }
}

/// Changes a test heard.
private final class LockedChanges: Sendable {
    private let changes = Mutex<[RemoteChange]>([])
    func append(_ change: RemoteChange) { changes.withLock { $0.append(change) } }
    var all: [RemoteChange] { changes.withLock { $0 } }
}
#endif
