import CourierCaching
import CourierCore
import Foundation
import Testing

@Suite("TieredCache")
struct TieredCacheTests {
    @Test("disk hits are promoted to memory; tiers are honoured")
    func promotion() async throws {
        try await withTemporaryDirectory { directory in
            let disk = try DiskCache(directory: directory)
            let key = CacheKey("GET https://example.com/p")
            let first = TieredCache(store: disk)
            await first.store(sampleResponse("v1"), for: key, in: .disk)
            #expect(await first.memoryUsage.count == 0)
            #expect(await first.lookup(key, in: .memory) == nil)
            let hit = try #require(await first.lookup(key))
            #expect(hit.tier == .disk && hit.response == sampleResponse("v1"))
            #expect(await first.memoryUsage.count == 1)
            #expect(await first.lookup(key)?.tier == .memory)
            await first.store(sampleResponse("v2"), for: key, in: .memory)
            #expect(await first.lookup(key)?.response.body == Data("v2".utf8))
            // Storing on disk only never leaves an older copy in memory in front of it.
            await first.store(sampleResponse("v3"), for: key, in: .disk)
            #expect(await first.lookup(key)?.response.body == Data("v3".utf8))
            await first.removeEntry(for: key)
            #expect(await first.lookup(key) == nil)
        }
    }

    @Test("expired entries are misses in both tiers (injected clock)")
    func expiry() async throws {
        try await withTemporaryDirectory { directory in
            let clock = WallClock(Date(timeIntervalSince1970: 1_700_000_000))
            let cache = TieredCache(store: try DiskCache(directory: directory), now: { clock.now })
            var response = sampleResponse("soon gone")
            response.expiresAt = clock.now + 60
            await cache.store(response, for: CacheKey("k"), in: .all)
            #expect(await cache.lookup(CacheKey("k")) != nil)
            clock.advance(60)
            #expect(await cache.lookup(CacheKey("k"), in: .memory) == nil)
            #expect(await cache.lookup(CacheKey("k"), in: .disk) == nil)
            #expect(entryFiles(directory).isEmpty)
        }
    }

    @Test("memory evictions and store failures are reported; a failing store is a miss")
    func events() async throws {
        let log = EventLog()
        let cache = TieredCache(
            memory: .init(totalCost: 2_000, count: 2, largestEntryFraction: 1), store: FailingStore())
        cache.observers.add { log.append($0) }
        for index in 0..<3 { await cache.store(sampleResponse("\(index)"), for: CacheKey("k\(index)"), in: .memory) }
        #expect(log.events.contains(.evicted(.memory, count: 1, bytes: sampleResponse("0").cost)))
        let kept = await cache.store(sampleResponse("x"), for: CacheKey("d"), in: .all)
        #expect(kept == .memory)
        #expect(await cache.lookup(CacheKey("nothing")) == nil)
        #expect(log.events.filter { $0.name == .storeFailed }.count == 2)
    }
}

/// A store whose every operation fails, as a broken database would.
struct FailingStore: CacheStore {
    struct Broken: Error {}
    func entry(for key: CacheKey) async throws -> CachedResponse? { throw Broken() }
    func store(_ response: CachedResponse, for key: CacheKey) async throws { throw Broken() }
    func removeEntry(for key: CacheKey) async throws { throw Broken() }
    func removeExpired(now: Date) async throws { throw Broken() }
    func removeAll() async throws { throw Broken() }
}

/// A settable wall clock.
final class WallClock: Sendable {
    private let current: LockedValue<Date>
    init(_ start: Date) { current = LockedValue(start) }
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
