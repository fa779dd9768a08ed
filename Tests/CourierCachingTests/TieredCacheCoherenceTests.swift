import CourierCaching
import Foundation
import Synchronization
import Testing

/// A shared store in memory that reports remote changes when a test says so.
private final class RemoteStore: CacheStore, CacheCoherenceSource {
    let remoteChanges = RemoteChanges()
    private let entries = Mutex<[CacheKey: CachedResponse]>([:])
    /// How long a read takes.
    let readTime: Duration
    init(readTime: Duration = .zero) { self.readTime = readTime }
    var tier: CacheTier { .shared }
    func entry(for key: CacheKey) async throws -> CachedResponse? {
        let found = entries.withLock { $0[key] }
        if readTime > .zero { try await Task.sleep(for: readTime) }
        return found
    }
    func store(_ response: CachedResponse, for key: CacheKey) async throws { entries.withLock { $0[key] = response } }
    func removeEntry(for key: CacheKey) async throws { entries.withLock { _ = $0.removeValue(forKey: key) } }
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws { entries.withLock { $0.removeAll() } }
}

/// A disk-tier store whose removals wait until the test releases them.
private final class SlowRemovals: CacheStore {
    let removing = Mutex(false)
    private let released = Mutex(false)
    var tier: CacheTier { .disk }
    func entry(for key: CacheKey) async throws -> CachedResponse? { nil }
    func store(_ response: CachedResponse, for key: CacheKey) async throws {}
    func removeEntry(for key: CacheKey) async throws {
        removing.withLock { $0 = true }
        while !released.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
    }
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws {}
    func release() { released.withLock { $0 = true } }
}

@Suite("TieredCache coherence")
struct TieredCacheCoherenceTests {
    static func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<2_000 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    @Test("a remote change drops the copies in front of the shared store, by key, by digest alone, or all")
    func remoteChangesDropCopiesInFront() async throws {
        try await withTemporaryDirectory { path in
            let disk = try DiskCache(directory: path)
            let shared = RemoteStore()
            let cache = TieredCache(stores: [disk, shared])
            let keys = (0..<3).map { CacheKey("GET https://api.example.com/items/\($0)") }
            for key in keys { await cache.store(sampleResponse("v1"), for: key, in: .all) }

            shared.remoteChanges.notify(.entry(digest: keys[0].digest, key: keys[0]))
            #expect(await Self.eventually { await cache.lookup(keys[0], in: .memory) == nil })
            #expect(await Self.eventually { (try? await disk.entry(for: keys[0])) == nil })
            #expect(try await shared.entry(for: keys[0]) != nil, "the shared store itself is left alone")

            // A key too long for a notification comes as its digest: found among memory's keys.
            shared.remoteChanges.notify(.entry(digest: keys[1].digest, key: nil))
            #expect(await Self.eventually { await cache.lookup(keys[1], in: .memory) == nil })
            #expect(await cache.lookup(keys[2], in: .memory) != nil)

            shared.remoteChanges.notify(.all)
            #expect(await Self.eventually { await cache.memoryUsage.count == 0 })
            #expect(await Self.eventually { (try? await disk.entry(for: keys[2])) == nil })
        }
    }

    @Test("a lookup that read the shared store while a drop of its key ran does not copy what it read")
    func aDropBeatsALookupInFlight() async throws {
        let shared = RemoteStore(readTime: .milliseconds(500))
        let cache = TieredCache(stores: [shared])
        let key = CacheKey("GET https://api.example.com/raced")
        try await shared.store(sampleResponse("old"), for: key)
        let lookup = Task { await cache.lookup(key) }
        try await Task.sleep(for: .milliseconds(100))  // the lookup reads the old version
        shared.remoteChanges.notify(.entry(digest: key.digest, key: key))  // the new one is written
        #expect(await lookup.value?.tier == .shared)
        #expect(await cache.lookup(key, in: .memory) == nil, "the old version was copied to memory")
        // A later lookup copies again.
        #expect(await cache.lookup(key)?.tier == .shared)
        #expect(await cache.lookup(key, in: .memory)?.tier == .memory)
    }

    @Test("a lookup copies upwards while a drop of a key in another bucket runs")
    func aDropElsewhereLetsALookupCopy() async throws {
        let front = SlowRemovals()
        let shared = RemoteStore()
        let cache = TieredCache(stores: [front, shared])
        let dropped = CacheKey("GET https://api.example.com/dropped")
        // A key whose digest starts with another byte (another bucket of drops).
        let read = try #require(
            (0..<64).lazy.map { CacheKey("GET https://api.example.com/read/\($0)") }
                .first { $0.digest.prefix(2) != dropped.digest.prefix(2) })
        try await shared.store(sampleResponse("read"), for: read)
        shared.remoteChanges.notify(.entry(digest: dropped.digest, key: dropped))
        #expect(await Self.eventually { front.removing.withLock { $0 } })  // the drop runs, held
        #expect(await cache.lookup(read)?.tier == .shared)
        #expect(await cache.lookup(read, in: .memory) != nil, "a drop of another bucket kept it from memory")
        front.release()
    }

    @Test("a cache that goes stops listening to its store's changes")
    func handlersLeaveWithTheCache() async throws {
        let shared = RemoteStore()
        var cache: TieredCache? = TieredCache(stores: [shared])
        #expect(shared.remoteChanges.count == 1)
        await cache?.store(sampleResponse("v1"), for: CacheKey("GET https://a.example/"), in: .all)
        cache = nil
        #expect(shared.remoteChanges.count == 0)
        shared.remoteChanges.notify(.all)  // nobody to call
        #expect(try await shared.entry(for: CacheKey("GET https://a.example/")) != nil)
    }
}
