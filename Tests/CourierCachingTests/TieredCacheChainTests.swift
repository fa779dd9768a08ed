import CourierCaching
import CourierCore
import Foundation
import Testing

/// A store over a dictionary that says which tier it is, as a shared database would.
actor DictionaryStore: CacheStore {
    nonisolated let tier: CacheTier
    private var entries: [CacheKey: CachedResponse] = [:]

    init(tier: CacheTier) { self.tier = tier }

    func has(_ key: CacheKey) -> Bool { entries[key] != nil }
    func entry(for key: CacheKey) async throws -> CachedResponse? { entries[key] }
    func store(_ response: CachedResponse, for key: CacheKey) async throws { entries[key] = response }
    func removeEntry(for key: CacheKey) async throws { entries[key] = nil }
    func removeExpired(now: Date) async throws {
        entries = entries.filter { $0.value.expiresAt.map { $0 > now } ?? true }
    }
    func removeAll() async throws { entries = [:] }
}

@Suite("TieredCache chain")
struct TieredCacheChainTests {
    @Test("memory, disk, shared: stores go to every named tier; a lower hit is promoted to the upper tiers named")
    func chain() async throws {
        try await withTemporaryDirectory { directory in
            let disk = try DiskCache(directory: directory)
            let shared = DictionaryStore(tier: .shared)
            #expect(disk.tier == .disk && CachePolicy.Tiers.all.contains(.shared))
            let first = TieredCache(stores: [disk, shared])
            let everywhere = CacheKey("GET https://example.com/all")
            #expect(await first.store(sampleResponse("a"), for: everywhere, in: .all) == .all)
            #expect(try await disk.entry(for: everywhere) != nil)
            #expect(await shared.has(everywhere))
            let skipsDisk = CacheKey("GET https://example.com/skip")
            #expect(
                await first.store(sampleResponse("s"), for: skipsDisk, in: [.memory, .shared]) == [.memory, .shared])
            #expect(try await disk.entry(for: skipsDisk) == nil)

            // Another process: its memory and disk are cold, the shared tier is not.
            let other = try DiskCache(directory: directory + "-other")
            defer { try? FileManager.default.removeItem(atPath: directory + "-other") }
            let second = TieredCache(stores: [other, shared])
            #expect(await second.lookup(skipsDisk, in: [.memory, .shared])?.tier == .shared)
            #expect(try await other.entry(for: skipsDisk) == nil)  // disk not named: not promoted there
            #expect(await second.lookup(skipsDisk, in: .memory)?.tier == .memory)
            let hit = try #require(await second.lookup(everywhere))
            #expect(hit.tier == .shared && hit.response == sampleResponse("a"))
            #expect(try await other.entry(for: everywhere) == sampleResponse("a"))
            #expect(await second.lookup(everywhere)?.tier == .memory)
            #expect(await second.lookup(everywhere, in: .disk)?.tier == .disk)
            #expect(await second.lookup(everywhere, in: .shared)?.tier == .shared)
            await second.removeEntry(for: everywhere)
            #expect(await !shared.has(everywhere))
            #expect(try await other.entry(for: everywhere) == nil)
        }
    }

    @Test("a failing store is a storeFailed event naming its tier; the chain carries on to the next")
    func failingMiddle() async throws {
        let shared = DictionaryStore(tier: .shared)
        let log = EventLog()
        let cache = TieredCache(stores: [FailingStore(), shared])
        cache.observers.add { log.append($0) }
        let key = CacheKey("GET https://example.com/f")
        #expect(await cache.store(sampleResponse("f"), for: key, in: .all) == [.memory, .shared])
        let fresh = TieredCache(stores: [FailingStore(), shared])
        fresh.observers.add { log.append($0) }
        #expect(await fresh.lookup(key)?.tier == .shared)  // the disk read failed; shared answered
        let failures = log.events.filter { $0.name == .storeFailed }
        #expect(failures.count == 3)  // the store, the read, the promotion
        #expect(failures.allSatisfy { $0.tier == .disk })
        #expect(await fresh.lookup(key)?.tier == .memory)
    }

    @Test("init(memory:store:) is a chain of one")
    func oneStore() async throws {
        let shared = DictionaryStore(tier: .shared)
        let cache = TieredCache(store: shared)
        #expect(cache.stores.count == 1 && cache.store?.tier == .shared)
        #expect(TieredCache().stores.isEmpty && TieredCache().store == nil)
        await cache.store(sampleResponse("o"), for: CacheKey("o"), in: .shared)
        #expect(await cache.lookup(CacheKey("o"), in: .disk) == nil)  // a policy without .shared never reads it
        #expect(await cache.lookup(CacheKey("o"))?.tier == .shared)
    }
}
