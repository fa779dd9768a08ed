import Courier
import Foundation
import Glibc

/// A plain dictionary behind an actor: what a memory cache costs at the least (no LRU, no limits).
actor DictionaryCache {
    var values: [CacheKey: CachedResponse] = [:]
    func value(for key: CacheKey) -> CachedResponse? { values[key] }
    func set(_ value: CachedResponse, for key: CacheKey) { values[key] = value }
}

func rate(_ operations: Int, since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(operations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func formatRate(_ value: Double) -> String { String(format: "%10.0f/s", value) }

/// Memory cache hits against a dictionary behind an actor; disk cache reads and writes of 10 KB
/// entries against plain POSIX file reads and writes (and Foundation's); opening a large cache.
func measureCaches(quick: Bool) async throws {
    let keys = (0..<10_000).map { CacheKey("GET https://api.example.com/items/\($0)") }
    let body = Data(repeating: UInt8(ascii: "x"), count: 10_240)
    let entry = CachedResponse(
        status: 200, headerFields: [.contentType: "application/json", .eTag: "\"abc\""], body: body,
        requestTime: Date(), responseTime: Date())
    let rounds = quick ? 50_000 : 400_000

    // Memory: the tiered cache's memory tier (one actor hop, LRU and limits) vs a dictionary in an actor.
    let tiered = TieredCache(memory: .init(totalCost: 1 << 30, count: 20_000))
    let dictionary = DictionaryCache()
    for key in keys {
        await tiered.store(entry, for: key, in: .memory)
        await dictionary.set(entry, for: key)
    }
    for callers in [1, 2] {
        var start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    for index in stride(from: caller, to: rounds, by: callers) {
                        _ = await tiered.lookup(keys[index % keys.count], in: .memory)
                    }
                }
            }
        }
        let ours = rate(rounds, since: start)
        start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    for index in stride(from: caller, to: rounds, by: callers) {
                        _ = await dictionary.value(for: keys[index % keys.count])
                    }
                }
            }
        }
        let peer = rate(rounds, since: start)
        print(
            "memory cache get-hit, \(callers) caller(s): TieredCache \(formatRate(ours)), dictionary in an actor \(formatRate(peer)) -> \(String(format: "%.2f", ours / peer))x"
        )
    }
    var start = ContinuousClock.now
    for index in 0..<rounds { await tiered.store(entry, for: keys[index % keys.count], in: .memory) }
    let ourSets = rate(rounds, since: start)
    start = ContinuousClock.now
    for index in 0..<rounds { await dictionary.set(entry, for: keys[index % keys.count]) }
    let peerSets = rate(rounds, since: start)
    print(
        "memory cache set:                 TieredCache \(formatRate(ourSets)), dictionary in an actor \(formatRate(peerSets)) -> \(String(format: "%.2f", ourSets / peerSets))x"
    )

    // Disk: 10 KB entries.
    let root = NSTemporaryDirectory() + "courier-cache-figures-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: root) }
    let count = quick ? 1_000 : 5_000
    let disk = try DiskCache(directory: root + "/cache", options: .init(sizeLimit: 1 << 30))
    start = ContinuousClock.now
    for index in 0..<count { try await disk.store(entry, for: keys[index]) }
    let diskWrites = rate(count, since: start)
    start = ContinuousClock.now
    for index in 0..<count { _ = try await disk.entry(for: keys[index]) }
    let diskReads = rate(count, since: start)
    start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for caller in 0..<8 {
            group.addTask {
                for index in stride(from: caller, to: count, by: 8) { _ = try await disk.entry(for: keys[index]) }
            }
        }
        try await group.waitForAll()
    }
    let concurrentReads = rate(count, since: start)

    let plain = root + "/plain"
    try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
    start = ContinuousClock.now
    for index in 0..<count { plainWrite(body, to: "\(plain)/\(index)") }
    let plainWrites = rate(count, since: start)
    start = ContinuousClock.now
    for index in 0..<count { _ = plainRead("\(plain)/\(index)") }
    let plainReads = rate(count, since: start)
    let foundation = root + "/foundation"
    try FileManager.default.createDirectory(atPath: foundation, withIntermediateDirectories: true)
    start = ContinuousClock.now
    for index in 0..<count { try body.write(to: URL(fileURLWithPath: "\(foundation)/\(index)"), options: .atomic) }
    let foundationWrites = rate(count, since: start)
    start = ContinuousClock.now
    for index in 0..<count { _ = try Data(contentsOf: URL(fileURLWithPath: "\(foundation)/\(index)")) }
    let foundationReads = rate(count, since: start)
    print(
        "disk cache write 10 KB:           DiskCache \(formatRate(diskWrites)), POSIX temp+rename \(formatRate(plainWrites)) -> \(String(format: "%.2f", diskWrites / plainWrites))x; Data.write(.atomic) \(formatRate(foundationWrites))"
    )
    print(
        "disk cache read 10 KB:            DiskCache \(formatRate(diskReads)), POSIX open+read \(formatRate(plainReads)) -> \(String(format: "%.2f", diskReads / plainReads))x; Data(contentsOf:) \(formatRate(foundationReads)); DiskCache with 8 callers \(formatRate(concurrentReads)) -> \(String(format: "%.2f", concurrentReads / plainReads))x"
    )

    // Opening a large cache: the index comes from directory metadata, no body is read.
    let entries = quick ? 10_000 : 100_000
    let large = try DiskCache(directory: root + "/large", options: .init(sizeLimit: 1 << 34))
    let small = CachedResponse(
        status: 200, headerFields: [:], body: Data(count: 100), requestTime: Date(), responseTime: Date())
    for index in 0..<entries {
        try await large.store(small, for: CacheKey("GET https://api.example.com/large/\(index)"))
    }
    start = ContinuousClock.now
    let reopened = try DiskCache(directory: root + "/large")
    let indexed = await reopened.count
    let opened = ContinuousClock.now - start
    let firstRead = ContinuousClock.now
    _ = try await reopened.entry(for: CacheKey("GET https://api.example.com/large/7"))
    print(
        "disk cache open with \(indexed) entries: \(opened) (first read after it: \(ContinuousClock.now - firstRead))")
}

/// Write to a temporary file and rename, with POSIX calls: an atomic write with nothing else.
func plainWrite(_ data: Data, to path: String) {
    let temporary = path + ".tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return }
    data.withUnsafeBytes { _ = write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    rename(temporary, path)
}

/// Open, size, read, close.
func plainRead(_ path: String) -> [UInt8]? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
    let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    return count == bytes.count ? bytes : nil
}
