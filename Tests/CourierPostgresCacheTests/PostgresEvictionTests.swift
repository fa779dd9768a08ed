#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("PostgreSQL cache store: size bound", postgresAvailable)
struct PostgresEvictionTests {
    /// Each row costs its key, fields and body plus 96 bytes: about 3.2 kB here.
    static func bulky(_ index: Int) -> CachedResponse {
        sampleResponse(body: String(repeating: "\(index % 10)", count: 3_000))
    }

    static func totalBytes(_ cluster: PostgresCluster) async throws -> Int {
        Int(try await cluster.psql("SELECT coalesce(sum(size), 0) FROM courier_cache_entries")) ?? -1
    }

    @Test("writes past the bound evict the least recently used rows, not the oldest written")
    func leastRecentlyUsedGoFirst() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.maximumBytes = 10_000
        configuration.evictionCheckInterval = 0  // check after every write
        try await withPostgresStore(configuration) { cluster, store in
            let keys = (0..<6).map { CacheKey("GET http://api.example/bulky/\($0)") }
            // Evictions run in the background: each write waits for its own here.
            func write(_ index: Int) async throws {
                try await store.store(Self.bulky(index), for: keys[index])
                await store.waitForEvictions()
            }
            for index in 0..<3 { try await write(index) }
            #expect(try await Self.totalBytes(cluster) <= 10_000)
            #expect(try await store.entry(for: keys[0]) != nil)  // 0 is now more recent than 1 and 2
            try await write(3)
            #expect(try await Self.totalBytes(cluster) <= 10_000)
            #expect(try await store.entry(for: keys[1]) == nil)
            #expect(try await store.entry(for: keys[0]) != nil)
            #expect(try await store.entry(for: keys[2]) != nil)
            #expect(try await store.entry(for: keys[3]) != nil)
            for index in 4..<6 {
                try await write(index)
                #expect(try await Self.totalBytes(cluster) <= 10_000)
            }
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "3")
        }
    }

    @Test("an eviction removes rows in batches until the rest fit")
    func batches() async throws {
        try await withPostgresStore { cluster, store in
            for index in 0..<7 {
                try await store.store(Self.bulky(index), for: CacheKey("GET http://api.example/batch/\(index)"))
            }
            var bounded = PostgresCacheStore.Configuration.testing
            bounded.maximumBytes = 7_000
            bounded.evictionBatchSize = 2
            let removed = try await withRunningStore(on: cluster, bounded) { try await $0.evictLeastRecentlyUsed() }
            #expect(removed.count == 5)
            #expect(removed.bytes > 5 * 3_000)
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "2")
            let survivors = try await cluster.psql("SELECT cache_key FROM courier_cache_entries ORDER BY cache_key")
            #expect(survivors == "GET http://api.example/batch/5\nGET http://api.example/batch/6")
        }
    }

    @Test("an eviction removes only the rows the excess covers, not a whole batch")
    func onlyTheExcess() async throws {
        try await withPostgresStore { cluster, store in
            for index in 0..<10 {
                try await store.store(Self.bulky(index), for: CacheKey("GET http://api.example/excess/\(index)"))
            }
            let total = try await Self.totalBytes(cluster)
            var bounded = PostgresCacheStore.Configuration.testing
            bounded.maximumBytes = total - 1  // one byte over: the oldest row goes, and only it
            let removed = try await withRunningStore(on: cluster, bounded) { try await $0.evictLeastRecentlyUsed() }
            #expect(removed.count == 1)
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "9")
            let oldest = try await cluster.psql("SELECT 1 FROM courier_cache_entries WHERE cache_key LIKE '%/excess/0'")
            #expect(oldest.isEmpty)
        }
    }

    /// 40,000 rows written by the server (their bodies fail the checksum, but eviction never
    /// reads them): every batch reads the index on last access in order, and the newest rows
    /// that fit stay, byte-exact.
    @Test("the bound holds over tens of thousands of rows, the newest staying")
    func manyRows() async throws {
        try await withPostgresStore { cluster, store in
            try await store.prepare()
            _ = try await cluster.psql(
                """
                INSERT INTO courier_cache_entries
                SELECT sha256(i::text::bytea), 'GET http://api.example/many/' || i, NULL, 200, ''::bytea,
                    repeat('x', 100)::bytea, 0, 0, NULL, 100 + i % 7, 0,
                    timestamptz '2026-01-01' + i * interval '1 second',
                    sha256(('http://api.example/many/' || i)::bytea), '{}'::text[], NULL
                FROM generate_series(1, 40000) AS i
                """)
            let total = try await Self.totalBytes(cluster)
            var bounded = PostgresCacheStore.Configuration.testing
            bounded.maximumBytes = total / 2
            bounded.evictionBatchSize = 700
            let removed = try await withRunningStore(on: cluster, bounded) { try await $0.evictLeastRecentlyUsed() }
            let left = try await Self.totalBytes(cluster)
            #expect(left <= total / 2)
            #expect(left + removed.bytes == total)
            // Exact: one row fewer would have left the table over the bound.
            #expect(left + 106 > total / 2)
            let oldestLeft = try await cluster.psql(
                "SELECT min(substring(cache_key from '[0-9]+$')::int) FROM courier_cache_entries")
            #expect(Int(oldestLeft) == removed.count + 1, "the survivors are the newest rows")
        }
    }

    @Test("the shared tier's evictions reach the coordinator's events")
    func evictionEvents() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.maximumBytes = 10_000
        configuration.evictionCheckInterval = 0
        try await withPostgresStore(configuration) { _, store in
            var settings = RequestCoordinator.Configuration()
            settings.cache = TieredCache(stores: [store])
            let transport = CurlTransport()
            let coordinator = RequestCoordinator(transport: transport, configuration: settings)
            let stream = coordinator.events()
            for index in 0..<5 {
                try await store.store(Self.bulky(index), for: CacheKey("GET http://api.example/events/\(index)"))
                await store.waitForEvictions()
            }
            await coordinator.shutdown()
            await transport.shutdown()
            var evicted: [(count: Int, bytes: Int)] = []
            for await event in stream {
                guard let cache = event.kind.cacheEvent, cache.name == .evicted, cache.tier == .shared else { continue }
                evicted.append((cache.count ?? 0, cache.bytes ?? 0))
            }
            // 5 rows of 3.2 kB under a bound of 10 kB: 2 go, one eviction each.
            #expect(evicted.count == 2)
            #expect(evicted.allSatisfy { $0.count == 1 && $0.bytes > 3_000 })
        }
    }
}
#endif
