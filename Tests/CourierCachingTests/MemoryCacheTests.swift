import CourierCaching
import CourierTestServer
import Foundation
import Testing

@Suite("MemoryCache")
struct MemoryCacheTests {
    @Test("a get makes an entry most recent; the least recent is evicted first")
    func lruOrder() {
        var cache = MemoryCache<String, Int>(limits: .init(totalCost: 1_000, count: 3, largestEntryFraction: 1))
        cache.setValue(1, for: "a", cost: 1)
        cache.setValue(2, for: "b", cost: 1)
        cache.setValue(3, for: "c", cost: 1)
        #expect(cache.keysByRecency == ["c", "b", "a"])
        #expect(cache.value(for: "a") == 1)
        #expect(cache.keysByRecency == ["a", "c", "b"])
        let evicted = cache.setValue(4, for: "d", cost: 1)
        #expect(evicted.count == 1)
        #expect(!cache.contains("b"))
        #expect(cache.keysByRecency == ["d", "a", "c"])
    }

    @Test("the cost limit evicts as many old entries as it takes")
    func costLimit() {
        var cache = MemoryCache<String, Int>(limits: .init(totalCost: 100, count: 100, largestEntryFraction: 0.5))
        for index in 0..<5 { cache.setValue(index, for: "k\(index)", cost: 20) }
        #expect(cache.totalCost == 100)
        let evicted = cache.setValue(9, for: "big", cost: 50)
        #expect(evicted.count == 3 && evicted.cost == 60)
        #expect(cache.totalCost == 90)
        #expect(cache.keysByRecency == ["big", "k4", "k3"])
    }

    @Test("an entry over the largest fraction is not kept, and drops the older value")
    func largeEntriesAreNotKept() {
        var cache = MemoryCache<String, Int>(limits: .init(totalCost: 100, count: 10, largestEntryFraction: 0.25))
        cache.setValue(1, for: "a", cost: 10)
        cache.setValue(2, for: "a", cost: 26)
        #expect(cache.value(for: "a") == nil)
        #expect(cache.totalCost == 0 && cache.count == 0)
    }

    @Test("replacing a value updates its cost; removing frees its slot for reuse")
    func replaceAndRemove() {
        var cache = MemoryCache<String, Int>(limits: .init(totalCost: 100, count: 2, largestEntryFraction: 1))
        cache.setValue(1, for: "a", cost: 10)
        cache.setValue(2, for: "a", cost: 30)
        #expect(cache.totalCost == 30 && cache.count == 1)
        #expect(cache.removeValue(for: "a") == 2)
        for round in 0..<1_000 { cache.setValue(round, for: "k\(round % 5)", cost: 1) }
        #expect(cache.count == 2 && cache.totalCost == 2)
        #expect(cache.keysByRecency == ["k4", "k3"])
    }

    @Test("entries expire at their time on an injected clock")
    func expiry() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var cache = MemoryCache<String, Int>()
        cache.setValue(1, for: "short", cost: 1, expiresAt: start + 10)
        cache.setValue(2, for: "long", cost: 1, expiresAt: start + 100)
        cache.setValue(3, for: "forever", cost: 1)
        #expect(cache.value(for: "short", now: start + 9.9) == 1)
        #expect(cache.value(for: "short", now: start + 10) == nil)
        #expect(!cache.contains("short"))
        #expect(cache.removeExpired(now: start + 200) == 1)
        #expect(cache.value(for: "forever", now: start + 1e9) == 3)
    }

    @Test("matches a reference model under a long random sequence of operations")
    func randomOperationsMatchAReferenceModel() {
        var generator = SeededGenerator(seed: 42)
        var cache = MemoryCache<Int, Int>(limits: .init(totalCost: 200, count: 16, largestEntryFraction: 0.25))
        var model: [(key: Int, value: Int, cost: Int)] = []  // most recent first
        for _ in 0..<20_000 {
            let key = Int(generator.next() % 40)
            switch generator.next() % 3 {
            case 0:
                let got = cache.value(for: key)
                let index = model.firstIndex { $0.key == key }
                #expect(got == index.map { model[$0].value })
                if let index { model.insert(model.remove(at: index), at: 0) }
            case 1:
                let cost = Int(generator.next() % 60)
                let value = Int(generator.next() % 1_000)
                cache.setValue(value, for: key, cost: cost)
                model.removeAll { $0.key == key }
                if cost <= 50 {
                    while !model.isEmpty && (model.reduce(0) { $0 + $1.cost } + cost > 200 || model.count + 1 > 16) {
                        model.removeLast()
                    }
                    model.insert((key, value, cost), at: 0)
                }
            default:
                cache.removeValue(for: key)
                model.removeAll { $0.key == key }
            }
        }
        #expect(cache.keysByRecency == model.map(\.key))
        #expect(cache.totalCost == model.reduce(0) { $0 + $1.cost })
    }
}
