#if PostgreSQL
import CourierCaching
import CourierPostgresCache
import Foundation
import Synchronization
import Testing

/// Two instances of a fleet: each a `TieredCache` with memory (and disk) in front of its own
/// `PostgresCacheStore` (its own pool) on one cluster.
@Suite("PostgreSQL cache coherence across instances", postgresAvailable)
struct PostgresCoherenceTests {
    static let key = CacheKey("GET https://api.example.com/coherent?id=1")

    static func body(_ hit: TieredCache.Hit?) -> String? {
        hit.map { String(decoding: $0.response.body, as: UTF8.self) }
    }

    @Test("a write on one instance drops the other's memory copy; its next read has the new version")
    func writesReachOtherInstances() async throws {
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [storeB])
                let invalidated = Mutex<[String]>([])
                cacheB.observers.add { event in
                    if event.name == .invalidated { invalidated.withLock { $0.append(event.key ?? "") } }
                }
                await cacheA.store(sampleResponse(body: "v1"), for: Self.key, in: .all)
                #expect(await cacheB.lookup(Self.key)?.tier == .shared)
                #expect(await cacheB.lookup(Self.key)?.tier == .memory)
                #expect(await eventually { storeA.notifications.isListening && storeB.notifications.isListening })

                await cacheA.store(sampleResponse(body: "v2"), for: Self.key, in: .all)
                #expect(await eventually { await cacheB.lookup(Self.key, in: .memory) == nil })
                let fresh = await cacheB.lookup(Self.key)
                #expect(fresh?.tier == .shared && Self.body(fresh) == "v2")
                #expect(invalidated.withLock { $0 } == ["GET https://api.example.com/coherent"])
                // A ignores its own announcement: its memory copy stays.
                try await Task.sleep(for: .milliseconds(300))
                let own = await cacheA.lookup(Self.key, in: .memory)
                #expect(own?.tier == .memory && Self.body(own) == "v2")
            }
        }
    }

    @Test("a write the shared tier refuses (a newer response is stored) leaves the writer's memory too")
    func supersededWrites() async throws {
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [storeB])
                func response(_ body: String, at time: TimeInterval) -> CachedResponse {
                    CachedResponse(
                        status: .ok, headerFields: [.contentType: "text/plain"], body: Data(body.utf8),
                        requestTime: Date(timeIntervalSince1970: time), responseTime: Date(timeIntervalSince1970: time))
                }
                await cacheA.store(response("newer", at: 1_764_000_100), for: Self.key, in: .all)
                // B's slower fetch answered earlier: PostgreSQL keeps A's, and B does not keep its own.
                await cacheB.store(response("older", at: 1_764_000_000), for: Self.key, in: .all)
                #expect(await eventually { await cacheB.lookup(Self.key, in: .memory) == nil })
                let read = await cacheB.lookup(Self.key)
                #expect(read?.tier == .shared && Self.body(read) == "newer")
            }
        }
    }

    @Test("a removal on one instance drops the other's memory and disk copies")
    func removalsReachOtherInstances() async throws {
        let directory = NSTemporaryDirectory() + "courier-coherence-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withPostgresStore { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster) { storeB in
                let disk = try DiskCache(directory: directory)
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [disk, storeB])
                await cacheA.store(sampleResponse(body: "v1"), for: Self.key, in: .all)
                #expect(await cacheB.lookup(Self.key)?.tier == .shared)  // copied to memory and disk
                #expect(try await disk.entry(for: Self.key) != nil)
                #expect(await eventually { storeB.notifications.isListening })

                await cacheA.removeEntry(for: Self.key)
                #expect(await eventually { await cacheB.lookup(Self.key, in: .memory) == nil })
                #expect(await eventually { (try? await disk.entry(for: Self.key)) == nil })
                #expect(await cacheB.lookup(Self.key) == nil)

                // Removing every entry reaches the others too.
                await cacheA.store(sampleResponse(body: "v3"), for: Self.key, in: .all)
                #expect(Self.body(await cacheB.lookup(Self.key)) == "v3")
                await cacheA.removeAll()
                #expect(await eventually { await cacheB.lookup(Self.key, in: .memory) == nil })
                #expect(await eventually { (try? await disk.entry(for: Self.key)) == nil })
            }
        }
    }

    @Test("with notifications off, nothing listens and other instances keep their copies until they expire")
    func notificationsOff() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.notifications = false
        try await withPostgresStore(configuration) { cluster, storeA in
            try await storeA.prepare()
            try await withRunningStore(on: cluster, configuration) { storeB in
                let cacheA = TieredCache(stores: [storeA])
                let cacheB = TieredCache(stores: [storeB])
                await cacheA.store(sampleResponse(body: "v1"), for: Self.key, in: .all)
                #expect(await cacheB.lookup(Self.key)?.tier == .shared)
                await cacheA.store(sampleResponse(body: "v2"), for: Self.key, in: .all)
                try await Task.sleep(for: .milliseconds(500))
                let kept = await cacheB.lookup(Self.key)
                #expect(kept?.tier == .memory && Self.body(kept) == "v1")
                #expect(!storeA.notifications.isListening && !storeB.notifications.isListening)
            }
        }
    }
}
#endif
