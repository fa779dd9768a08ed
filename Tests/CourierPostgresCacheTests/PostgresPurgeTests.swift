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
