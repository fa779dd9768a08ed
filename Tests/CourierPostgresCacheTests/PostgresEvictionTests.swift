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
}
#endif
