#if PostgreSQL
import CourierCaching
import CourierPostgresCache
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import PostgresNIO
import Synchronization
import Testing

/// Purges on one instance of a fleet, reaching the shared tier and the other instances'
/// memory and disk tiers.
@Suite("PostgreSQL cache purges across instances", postgresAvailable)
struct PostgresPurgeTests {
    static let product = CacheKey("GET https://api.example.com/products/7")
    static let productOfUser = CacheKey("GET https://api.example.com/products/7 credentials=0123")
    static let shelf = CacheKey("GET https://api.example.com/shelves/3")
    static let other = CacheKey("GET https://api.example.com/products/8")

    /// A response naming `tags` in `Surrogate-Key`.
    static func tagged(_ body: String, _ tags: String) -> CachedResponse {
        var response = sampleResponse(body: body)
        response.headerFields[HTTPField.Name("Surrogate-Key")!] = tags
        return response
    }

    @Test("purge(tag:) removes the shared rows and the other instance's memory and disk copies; nothing else")
    func hardPurgeByTag() async throws {
        let directory = NSTemporaryDirectory() + "courier-purge-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let disk = try DiskCache(directory: directory)
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [disk, storeB])
                let purged = Mutex<[String]>([])
                cacheA.observers.add { event in
                    if event.name == .purged { purged.withLock { $0.append("\(event.tier!) \(event.count!)") } }
                }
                await cacheA.store(Self.tagged("p7", "product-7 catalog"), for: Self.product, in: .all)
                await cacheA.store(Self.tagged("p7u", "product-7"), for: Self.productOfUser, in: .all)
                await cacheA.store(Self.tagged("s3", "shelf-3 catalog"), for: Self.shelf, in: .all)
                await cacheA.store(Self.tagged("p8", "product-8"), for: Self.other, in: .all)
                for key in [Self.product, Self.productOfUser, Self.shelf, Self.other] {
                    #expect(await cacheB.lookup(key)?.tier == .shared)  // now in B's memory and disk too
                }
                #expect(await eventually { storeB.notifications.isListening })

                #expect(try await cacheA.purge(tag: "product-7") == 4)  // 2 in A's memory, 2 rows
                #expect(purged.withLock { $0 } == ["memory 2", "shared 2"])
                #expect(await eventually { await cacheB.lookup(Self.product, in: .memory) == nil })
                #expect(await eventually { await cacheB.lookup(Self.productOfUser, in: .memory) == nil })
                #expect(try await disk.entry(for: Self.product) == nil)
                #expect(try await disk.entry(for: Self.productOfUser) == nil)
                #expect(await cacheB.lookup(Self.product) == nil)
                #expect(try await storeB.entry(for: Self.productOfUser) == nil)
                for key in [Self.shelf, Self.other] { #expect(await cacheB.lookup(key, in: .memory) != nil) }

                // By URL: every user's entry of it.
                #expect(try await cacheA.purge(url: "https://api.example.com/shelves/3") == 2)
                #expect(await eventually { await cacheB.lookup(Self.shelf, in: .memory) == nil })
                #expect(try await storeB.entry(for: Self.shelf) == nil)
                #expect(await cacheB.lookup(Self.other, in: .memory) != nil)
            }
        }
    }

    @Test("a soft purge marks the shared rows stale; the other instance drops its copies and reads the mark")
    func softPurgeByURL() async throws {
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [storeB])
                await cacheA.store(Self.tagged("p7", "product-7"), for: Self.product, in: .all)
                #expect(await cacheB.lookup(Self.product)?.tier == .shared)
                #expect(await eventually { storeB.notifications.isListening })

                let before = Date()
                #expect(try await cacheA.purge(url: "https://api.example.com/products/7", soft: true) == 2)
                #expect(await eventually { await cacheB.lookup(Self.product, in: .memory) == nil })
                let read = try #require(await cacheB.lookup(Self.product))
                #expect(read.tier == .shared)
                #expect(read.response.body == Data("p7".utf8))
                let mark = try #require(read.response.purgedAt)
                #expect(mark >= before.addingTimeInterval(-1) && mark <= Date().addingTimeInterval(1))
                #expect(!HTTPCacheRules.freshness(of: read.response, now: Date(), shared: true).isFresh)
                // A second soft purge finds the row marked already.
                #expect(
                    try await storeA.purge(.url("https://api.example.com/products/7"), soft: true, now: Date()) == 0)
                // A response requested before the purge keeps the mark, also when an instance
                // other than the purger stores it: that instance's own copies then go too.
                await cacheB.store(Self.tagged("p7 v2", "product-7"), for: Self.product, in: .all)
                #expect(try await storeB.entry(for: Self.product)?.purgedAt == mark)
                #expect(await eventually { await cacheB.lookup(Self.product, in: .memory) == nil })
                #expect(await cacheB.lookup(Self.product)?.response.purgedAt == mark)
                // One requested after the purge clears it.
                var newer = Self.tagged("p7 v3", "product-7")
                newer.requestTime = Date().addingTimeInterval(1)
                newer.responseTime = newer.requestTime
                await cacheA.store(newer, for: Self.product, in: .all)
                #expect(try await storeB.entry(for: Self.product)?.purgedAt == nil)
            }
        }
    }

    @Test(
        "a listener that loses its connection drops every local copy when it listens again (it may have missed purges)")
    func reconnectDropsLocalCopies() async throws {
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let cacheB = TieredCache(stores: [storeB])
                await cacheB.store(Self.tagged("p7", "product-7"), for: Self.product, in: .all)
                #expect(await cacheB.lookup(Self.product, in: .memory) != nil)
                #expect(await eventually { storeB.notifications.isListening })
                // The server ends every listening session (as a restart or a lost connection would).
                _ = try await storeA.client.query(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
                    """
                ).collect()
                #expect(await eventually { await cacheB.lookup(Self.product, in: .memory) == nil })
                #expect(await eventually { storeB.notifications.isListening })
                #expect(await cacheB.lookup(Self.product)?.tier == .shared)  // read again from the fleet's tier
            }
        }
    }

    @Test("after a soft purge, the fleet's loads are served the stale entry and the origin gets one revalidation")
    func softPurgeAcrossTheFleet() async throws {
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStores(on: cluster, count: 3) { others in
                let stores = [storeA] + others
                try await withTestServer { server in
                    let transport = CurlTransport()
                    let coordinators = stores.map { store in
                        var settings = RequestCoordinator.Configuration()
                        settings.cache = TieredCache(stores: [store])
                        return RequestCoordinator(transport: transport, configuration: settings)
                    }
                    let resource = CacheRouteResource(
                        baseURL: server.baseURL, key: "fleet-soft",
                        query: ["cc": "max-age=600, stale-while-revalidate=60", "etag": "1", "sk": "product-7"],
                        cachePolicy: CachePolicy.http().collapsingAcrossFleet())
                    _ = try await resource.load(using: coordinators[0])
                    for coordinator in coordinators.dropFirst() {
                        #expect(try await resource.loadResponse(using: coordinator).source == .shared)
                    }
                    #expect(await eventually { stores.allSatisfy { $0.notifications.isListening } })
                    let purger = try #require(coordinators[0].configuration.cache)
                    #expect(try await purger.purge(tag: "product-7", soft: true) == 2)  // memory and the row
                    for coordinator in coordinators.dropFirst() {
                        #expect(await eventually { await coordinator.configuration.cache!.memoryUsage.count == 0 })
                    }

                    // Every other instance loads it at once, five times (the purger's own stale
                    // copy would be refreshed first, and the others would read its answer).
                    let loads = try await withThrowingTaskGroup(of: Loaded<Data>.self) { group in
                        for coordinator in coordinators.dropFirst() {
                            for _ in 0..<5 { group.addTask { try await resource.loadResponse(using: coordinator) } }
                        }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    #expect(loads.count == 15)
                    #expect(loads.contains { $0.isStale })
                    #expect(await eventually { server.cacheCounts("fleet-soft").notModified == 1 })
                    for coordinator in coordinators {
                        #expect(
                            await eventually {
                                (try? await resource.loadResponse(using: coordinator).isStale) == false
                            })
                    }
                    #expect(server.cacheCounts("fleet-soft").requests == 2)  // the first load, one 304
                    for coordinator in coordinators { await coordinator.shutdown() }
                    await transport.shutdown()
                }
            }
        }
    }

    @Test(
        "purges the server missed (killed) wait; with no call they reach it once it is back, the soft one at its time")
    func purgesDuringAnOutage() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.timeout = .seconds(1)
        try await withPostgresStore(configuration) { cluster, store in
            try await store.prepare()
            let cache = TieredCache(stores: [store])
            await cache.store(Self.tagged("p7", "product-7"), for: Self.product, in: .all)
            await cache.store(Self.tagged("s3", "shelf-3"), for: Self.shelf, in: .all)
            await cache.store(Self.tagged("p8", "product-8"), for: Self.other, in: .all)
            try await cluster.kill()
            let error = await #expect(throws: ServiceError.self) { try await cache.purge(tag: "product-7") }
            #expect(error?.message.hasSuffix("The purge is applied when the server answers again.") == true)
            #expect(await cache.lookup(Self.product, in: .memory) == nil)  // the local tiers at once
            let before = Date()
            await #expect(throws: ServiceError.self) {
                try await cache.purge(url: "https://api.example.com/shelves/3", soft: true)
            }
            let after = Date()
            #expect(
                store.pendingPurges.withLock { $0.waiting.map(\.target) } == [
                    .tag("product-7"), .url("https://api.example.com/shelves/3"),
                ])
            try await cluster.restart()
            #expect(await eventually { store.pendingPurges.withLock { $0.waiting.isEmpty } })
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "2")
            #expect(
                try await cluster.psql("SELECT count(*) FROM courier_cache_entries WHERE 'product-7' = ANY(tags)")
                    == "0")
            let mark = try await cluster.psql(
                "SELECT purged_at FROM courier_cache_entries WHERE cache_key = '\(Self.shelf.rawValue)'")
            let marked = try #require(Double(mark))
            #expect(marked >= before.timeIntervalSince1970 - 0.001 && marked <= after.timeIntervalSince1970 + 0.001)
        }
    }

    @Test(
        "reads apply the purges the server missed at once; the server gets them when replays may run; one it refuses is given up"
    )
    func readsApplyMissedPurges() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.timeout = .seconds(1)
        configuration.notifications = false
        try await withPostgresStore(configuration) { cluster, store in
            try await store.prepare()
            store.pendingPurges.withLock { $0.holdsReplays = true }
            try await store.store(Self.tagged("p7", "product-7"), for: Self.product)
            try await store.store(Self.tagged("s3", "shelf-3"), for: Self.shelf)
            try await store.store(Self.tagged("p8", "product-8"), for: Self.other)
            try await cluster.kill()
            let before = Date()
            for (target, soft) in [
                (PurgeTarget.url("https://api.example.com/products/7"), false), (.tag("shelf-3"), true),
                (.tag("product-8"), false),
            ] {
                await #expect(throws: ServiceError.self) { try await store.purge(target, soft: soft, now: before) }
            }
            try await cluster.restart()
            // Reads may fail for a while (the pause after a failure, a pool still connecting,
            // a call past its 1 s limit with the whole suite running): each retries for 30 s.
            func read(_ key: CacheKey) async throws -> CachedResponse? {
                let started = ContinuousClock.now
                while true {
                    do {
                        return try await store.entry(for: key)
                    } catch let error as ServiceError
                        where [.timedOut, .cacheStoreFailed].contains(error.code)
                        && ContinuousClock.now - started < .seconds(30)
                    {
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
            let shelf = try await read(Self.shelf)
            #expect(shelf?.purgedAt == before)
            #expect(try await read(Self.product) == nil)
            #expect(try await read(Self.other) == nil)
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries WHERE purged_at IS NULL") == "3")

            // The server refuses to delete product 8's row (as a permission might).
            _ = try await cluster.psql(
                """
                CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF OLD.cache_key LIKE '%products/8' THEN RAISE EXCEPTION 'refused by the test'; END IF;
                    RETURN OLD;
                END $$;
                CREATE TRIGGER refuse_delete BEFORE DELETE ON courier_cache_entries
                    FOR EACH ROW EXECUTE FUNCTION refuse_delete()
                """)
            store.pendingPurges.withLock { $0.holdsReplays = false }
            _ = try await read(Self.shelf)  // a call that succeeds starts the replay
            #expect(await eventually { store.pendingPurges.withLock { $0.waiting.isEmpty } })
            #expect(
                try await cluster.psql("SELECT count(*) FROM courier_cache_entries WHERE cache_key LIKE '%products/7'")
                    == "0")
            #expect(
                try await cluster.psql("SELECT count(*) FROM courier_cache_entries WHERE purged_at IS NOT NULL") == "1")
            // Given up: the row stays, and reads return it again.
            #expect(try await read(Self.other)?.body == Data("p8".utf8))

            // A purge the server refuses at once does not wait.
            let refused = await #expect(throws: ServiceError.self) {
                try await store.purge(.tag("product-8"), soft: false, now: Date())
            }
            #expect(refused?.message.contains("applied when the server answers") == false)
            #expect(store.pendingPurges.withLock { $0.waiting.isEmpty })
        }
    }

    @Test("purges waiting for the server: one per target at its latest time, hard over soft, at most 1,024")
    func pendingPurges() {
        let start = Date(timeIntervalSince1970: 1_764_000_000)
        var pending = PendingPurges()
        let a = PurgeTarget.tag("a")
        let b = PurgeTarget.url("https://api.example.com/b")
        #expect(pending.add(.init(a, soft: true, now: start)) == nil)
        #expect(pending.add(.init(b, soft: true, now: start)) == nil)
        #expect(pending.add(.init(a, soft: true, now: start + 1)) == nil)
        #expect(pending.waiting == [.init(b, soft: true, now: start), .init(a, soft: true, now: start + 1)])
        #expect(pending.add(.init(b, soft: false, now: start + 2)) == nil)
        #expect(pending.add(.init(b, soft: true, now: start + 3)) == nil)  // nothing to add to the hard one
        #expect(pending.waiting == [.init(a, soft: true, now: start + 1), .init(b, soft: false, now: start + 2)])
        pending.remove(.init(a, soft: true, now: start))  // replaced meanwhile: stays
        #expect(pending.waiting.count == 2)
        pending.remove(.init(a, soft: true, now: start + 1))
        #expect(pending.waiting == [.init(b, soft: false, now: start + 2)])
        for index in 1..<PendingPurges.limit {
            #expect(pending.add(.init(.tag("t\(index)"), soft: false, now: start)) == nil)
        }
        // Reads meanwhile: a hard purge hides the entry, a soft one marks it (once, at its time).
        let response = Self.tagged("p7", "product-7 catalog")
        #expect(pending.applied(to: response, for: Self.product) == response)
        #expect(pending.applied(to: response, for: CacheKey("GET https://api.example.com/b")) == nil)
        var soft = PendingPurges()
        _ = soft.add(.init(.tag("catalog"), soft: true, now: start + 10))  // after the response's request
        #expect(soft.applied(to: response, for: Self.product)?.purgedAt == start + 10)
        _ = soft.add(.init(.url("https://api.example.com/products/7"), soft: false, now: start))
        #expect(soft.applied(to: response, for: Self.product) == nil)
        let untagged = Self.tagged("p8", "product-8")
        #expect(soft.applied(to: untagged, for: Self.other) == untagged)

        let dropped = pending.add(.init(.tag("last"), soft: false, now: start))
        #expect(dropped == .init(b, soft: false, now: start + 2))
        #expect(pending.waiting.count == PendingPurges.limit)
        #expect(pending.waiting.last?.target == .tag("last"))

        // One replay at a time, none while held or with nothing waiting.
        var replays = PendingPurges()
        var claims = [replays.startReplay()]
        _ = replays.add(.init(a, soft: false, now: start))
        replays.holdsReplays = true
        claims.append(replays.startReplay())
        replays.holdsReplays = false
        claims.append(replays.startReplay())
        claims.append(replays.startReplay())
        #expect(claims == [false, false, true, false])
    }

    @Test("malformed purge notifications are ignored; an instance ignores its own")
    func malformedNotifications() {
        let changes = RemoteChanges()
        let heard = Mutex<[RemoteChange]>([])
        _ = changes.add { change in heard.withLock { $0.append(change) } }
        let listening = PostgresCacheStore.Listening(
            notifications: LeaseNotifications(), remoteChanges: changes, instance: "me")
        for payload in [
            "purge other hard tag", "purge other maybe tag a", "purge other hard tag a,b",
            "purge other soft url ftp://x/y",
            "purge other hard urlDigest 12", "purge other hard color red", "purge me hard tag a",
        ] {
            PostgresCacheStore.deliver(payload, to: listening)
        }
        #expect(heard.withLock { $0 }.isEmpty)
        PostgresCacheStore.deliver("purge other soft tag product-7", to: listening)
        PostgresCacheStore.deliver("purge other hard url HTTPS://api.example.com/a?b=1", to: listening)
        let digest = String(repeating: "ab", count: 32)
        PostgresCacheStore.deliver("purge other hard urlDigest \(digest)", to: listening)
        #expect(
            heard.withLock { $0 } == [
                .purge(.tag("product-7")), .purge(.url("https://api.example.com/a?b=1")), .purge(.urlDigest(digest)),
            ])
    }
}

/// Runs `body` with `count` more stores on `cluster`, each with its pool running.
func withRunningStores<T: Sendable>(
    on cluster: PostgresCluster, count: Int, _ body: ([PostgresCacheStore]) async throws -> T
) async throws -> T {
    guard count > 0 else { return try await body([]) }
    return try await withRunningStore(on: cluster) { store in
        try await withRunningStores(on: cluster, count: count - 1) { others in try await body([store] + others) }
    }
}
#endif
