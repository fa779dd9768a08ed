import CourierCaching
import Testing

/// `CacheEvent` and `CacheTier` are structs over private enums: names to switch on, fields to read.
@Suite("Cache events and tiers as structs")
struct CacheEventTests {
    @Test("each event has its name and exactly its own fields")
    func namesAndFields() {
        let hit = CacheEvent.hit(.memory, key: "k")
        #expect(hit.name == .hit && hit.tier == .memory && hit.key == "k" && hit.bytes == nil && hit.count == nil)
        let stored = CacheEvent.stored(.disk, key: "s", bytes: 12)
        #expect(stored.name == .stored && stored.tier == .disk && stored.bytes == 12 && stored.notModified == nil)
        let evicted = CacheEvent.evicted(.disk, count: 3, bytes: 40)
        #expect(evicted.name == .evicted && evicted.key == nil && evicted.count == 3 && evicted.bytes == 40)
        let revalidated = CacheEvent.revalidated(key: "r", notModified: true)
        #expect(revalidated.name == .revalidated && revalidated.tier == nil && revalidated.notModified == true)
        let failed = CacheEvent.storeFailed(.disk, reason: "full")
        #expect(failed.name == .storeFailed && failed.reason == "full" && failed.key == nil)
        #expect(CacheEvent.miss(key: "m").name == .miss && CacheEvent.invalidated(key: "i").key == "i")
        #expect(CacheEvent.servedAfterError(.memory, key: "e").name == .servedAfterError)
        #expect(hit == .hit(.memory, key: "k") && hit != .hit(.disk, key: "k"))
        #expect(Set([hit, .hit(.memory, key: "k"), stored]).count == 2)
    }

    @Test("names and tiers print as stable labels")
    func labels() {
        #expect(CacheTier.memory.description == "memory" && CacheTier.disk.description == "disk")
        #expect(CacheEvent.Name.servedAfterError.description == "servedAfterError")
        #expect("\(CacheTier.disk)" == "disk")
        switch CacheEvent.miss(key: "m").name {
        case .hit: Issue.record("a miss is not a hit")
        case .miss: break
        default: Issue.record("a miss has the name miss")
        }
    }
}
