import Courier
import Foundation
import Glibc

/// The usual hand-written LRU: a dictionary into a doubly linked list of class nodes, behind an actor.
actor DictionaryLRU {
    final class Node {
        let key: CacheKey
        var value: CachedResponse
        var newer: Node?
        weak var older: Node?
        init(key: CacheKey, value: CachedResponse) {
            self.key = key
            self.value = value
        }
    }
    private var nodes: [CacheKey: Node] = [:]
    private var newest: Node?
    private var oldest: Node?
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func value(for key: CacheKey) -> CachedResponse? {
        guard let node = nodes[key] else { return nil }
        moveToFront(node)
        return node.value
    }

    func set(_ value: CachedResponse, for key: CacheKey) {
        if let node = nodes[key] {
            node.value = value
            moveToFront(node)
            return
        }
        let node = Node(key: key, value: value)
        nodes[key] = node
        node.older = newest
        newest?.newer = node
        newest = node
        if oldest == nil { oldest = node }
        if nodes.count > limit, let victim = oldest {
            oldest = victim.newer
            oldest?.older = nil
            nodes[victim.key] = nil
        }
    }

    private func moveToFront(_ node: Node) {
        guard newest !== node else { return }
        if oldest === node { oldest = node.newer }
        node.older?.newer = node.newer
        node.newer?.older = node.older
        node.older = newest
        node.newer = nil
        newest?.newer = node
        newest = node
    }
}

/// NSCache is thread-safe on its own; a box makes the value a class.
final class Box: Sendable {
    let value: CachedResponse
    init(_ value: CachedResponse) { self.value = value }
}

/// `NSCache` is documented thread-safe, but not marked Sendable on Linux.
struct SendableNSCache: @unchecked Sendable {
    // Invariant: NSCache synchronizes every call internally; the key arrays are immutable
    // NSStrings, created once and only read afterwards.
    let cache = NSCache<NSString, Box>()
    let names: [NSString]
    let missNames: [NSString]
}

/// Memory cache get/set/miss against a dictionary LRU in an actor and NSCache; disk cache reads
/// and writes of 10 KB entries against plain file I/O; tiered promotion; opening a large cache.
func caches(report: Report, quick: Bool, runs: Int) async throws {
    report.section("Cache: operations/s (median of \(runs)); 10,000 keys, 10 KB entries")
    let keys = (0..<10_000).map { CacheKey("GET https://api.example.com/items/\($0)") }
    let entry = CachedResponse(
        status: 200, headerFields: [.contentType: "application/json", .eTag: "\"abc\""],
        body: Data(repeating: UInt8(ascii: "x"), count: 10_240), requestTime: Date(), responseTime: Date())
    let operations = quick ? 100_000 : 1_000_000

    let tiered = TieredCache(memory: .init(totalCost: 1 << 30, count: 20_000))
    let lru = DictionaryLRU(limit: 20_000)
    let missKeys = (0..<1_000).map { CacheKey("GET https://api.example.com/missing/\($0)") }
    let nscache = SendableNSCache(
        names: keys.map { NSString(string: $0.digest) }, missNames: missKeys.map { NSString(string: $0.digest) })
    let box = Box(entry)
    for (key, name) in zip(keys, nscache.names) {
        await tiered.store(entry, for: key, in: .memory)
        await lru.set(entry, for: key)
        nscache.cache.setObject(box, forKey: name)
    }

    for callers in [1, 2] {
        func rate(_ operation: @escaping @Sendable (Int) async -> Void) async -> [Double] {
            var samples: [Double] = []
            for _ in 0..<runs {
                let start = ContinuousClock.now
                await withTaskGroup(of: Void.self) { group in
                    for caller in 0..<callers {
                        group.addTask {
                            for index in stride(from: caller, to: operations, by: callers) { await operation(index) }
                        }
                    }
                }
                samples.append(Double(operations) / (ContinuousClock.now - start).seconds)
            }
            return samples
        }
        progress("memory get-hit, \(callers) caller(s)")
        let ours = await rate { _ = await tiered.lookup(keys[$0 % 10_000], in: .memory) }
        let dictionary = await rate { _ = await lru.value(for: keys[$0 % 10_000]) }
        let ns = await rate { _ = nscache.cache.object(forKey: nscache.names[$0 % 10_000]) }
        let scenario = "memory get-hit x\(callers)"
        let reference = report.add(scenario, "dictionary LRU in an actor", unit: "ops/s", samples: dictionary)
        report.add(scenario, "NSCache", unit: "ops/s", samples: ns, reference: reference)
        report.add(scenario, "Courier TieredCache (memory)", unit: "ops/s", samples: ours, reference: reference)

        progress("memory set, \(callers) caller(s)")
        let ourSets = await rate { await tiered.store(entry, for: keys[$0 % 10_000], in: .memory) }
        let dictionarySets = await rate { await lru.set(entry, for: keys[$0 % 10_000]) }
        let nsSets = await rate { nscache.cache.setObject(box, forKey: nscache.names[$0 % 10_000]) }
        let setScenario = "memory set x\(callers)"
        let setReference = report.add(setScenario, "dictionary LRU in an actor", unit: "ops/s", samples: dictionarySets)
        report.add(setScenario, "NSCache", unit: "ops/s", samples: nsSets, reference: setReference)
        report.add(
            setScenario, "Courier TieredCache (memory)", unit: "ops/s", samples: ourSets, reference: setReference)

        progress("memory miss, \(callers) caller(s)")
        let ourMisses = await rate { _ = await tiered.lookup(missKeys[$0 % 1_000], in: .memory) }
        let dictionaryMisses = await rate { _ = await lru.value(for: missKeys[$0 % 1_000]) }
        let nsMisses = await rate { _ = nscache.cache.object(forKey: nscache.missNames[$0 % 1_000]) }
        let missScenario = "memory miss x\(callers)"
        let missReference = report.add(
            missScenario, "dictionary LRU in an actor", unit: "ops/s", samples: dictionaryMisses)
        report.add(missScenario, "NSCache", unit: "ops/s", samples: nsMisses, reference: missReference)
        report.add(
            missScenario, "Courier TieredCache (memory)", unit: "ops/s", samples: ourMisses, reference: missReference)
    }

    // Disk: 10 KB entries against a plain atomic file write and a plain read.
    let root = NSTemporaryDirectory() + "courier-bench-cache-\(getpid())"
    let undo = Cleanup.removes(root)
    defer {
        try? FileManager.default.removeItem(atPath: root)
        Cleanup.done(undo)
    }
    let count = quick ? 1_000 : 5_000
    var writes: [Double] = []
    var reads: [Double] = []
    var plainWrites: [Double] = []
    var plainReads: [Double] = []
    var promotions: [Double] = []
    for run in 0..<runs {
        progress("disk cache, run \(run + 1)/\(runs)")
        let disk = try DiskCache(directory: "\(root)/disk-\(run)", options: .init(sizeLimit: 1 << 30))
        var start = ContinuousClock.now
        for index in 0..<count { try await disk.store(entry, for: keys[index]) }
        writes.append(Double(count) / (ContinuousClock.now - start).seconds)
        start = ContinuousClock.now
        for index in 0..<count { _ = try await disk.entry(for: keys[index]) }
        reads.append(Double(count) / (ContinuousClock.now - start).seconds)

        let plain = "\(root)/plain-\(run)"
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        start = ContinuousClock.now
        for index in 0..<count { try entry.body.write(to: URL(fileURLWithPath: "\(plain)/\(index)"), options: .atomic) }
        plainWrites.append(Double(count) / (ContinuousClock.now - start).seconds)
        start = ContinuousClock.now
        for index in 0..<count { _ = try Data(contentsOf: URL(fileURLWithPath: "\(plain)/\(index)")) }
        plainReads.append(Double(count) / (ContinuousClock.now - start).seconds)

        // Tiered promotion: each key is on disk only; the first lookup reads it and promotes it.
        let promoting = TieredCache(memory: .init(totalCost: 1 << 30, count: 20_000), store: disk)
        start = ContinuousClock.now
        for index in 0..<count { _ = await promoting.lookup(keys[index]) }
        promotions.append(Double(count) / (ContinuousClock.now - start).seconds)
    }
    let plainWrite = report.add("disk write 10 KB", "Data.write(.atomic)", unit: "ops/s", samples: plainWrites)
    report.add("disk write 10 KB", "Courier DiskCache", unit: "ops/s", samples: writes, reference: plainWrite)
    let plainRead = report.add("disk read 10 KB", "Data(contentsOf:)", unit: "ops/s", samples: plainReads)
    report.add("disk read 10 KB", "Courier DiskCache", unit: "ops/s", samples: reads, reference: plainRead)
    report.add(
        "tiered promotion", "disk hit promoted to memory", unit: "ops/s", samples: promotions, reference: plainRead)

    // Opening a large cache: the index comes from directory metadata; no body is read.
    let entries = quick ? 10_000 : 100_000
    progress("writing \(entries) entries")
    let large = try DiskCache(directory: root + "/large", options: .init(sizeLimit: 1 << 34))
    let small = CachedResponse(
        status: 200, headerFields: [:], body: Data(count: 100), requestTime: Date(), responseTime: Date())
    for index in 0..<entries {
        try await large.store(small, for: CacheKey("GET https://api.example.com/large/\(index)"))
    }
    var opens: [Double] = []
    for _ in 0..<runs {
        progress("opening \(entries) entries")
        let start = ContinuousClock.now
        let reopened = try DiskCache(directory: root + "/large")
        let indexed = await reopened.count
        precondition(indexed == entries)
        opens.append((ContinuousClock.now - start).seconds * 1_000)
    }
    report.add("disk open", "DiskCache with \(entries) entries", unit: "ms", samples: opens)
}
