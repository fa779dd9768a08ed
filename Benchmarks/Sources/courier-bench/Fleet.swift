#if Peers
import Courier
import CourierPostgresCache
import Foundation
import Glibc
import PostgresNIO
import Synchronization

/// The shared tier and fleet-wide collapsing, against a PostgreSQL cluster of the benchmark's
/// own: hits from each tier, and a fleet of processes loading the same cold URLs at once.
func fleet(nginx: Nginx, postgres: Postgres, report: Report, quick: Bool, runs: Int) async throws {
    try await sharedTierHits(postgres: postgres, report: report, quick: quick, runs: runs)
    try await evictionAtScale(postgres: postgres, report: report, quick: quick)
    try fleetStampede(nginx: nginx, postgres: postgres, report: report, quick: quick)
    try await collapseWakeUp(nginx: nginx, postgres: postgres, report: report, quick: quick)
    try await coherence(.write, postgres: postgres, report: report, quick: quick)
    try await coherence(.purge, postgres: postgres, report: report, quick: quick)
    try await fleetPurge(nginx: nginx, postgres: postgres, report: report, quick: quick)
}

/// What one instance does to a key the others hold, in a coherence row.
private enum CoherenceAction {
    /// It writes a new version.
    case write
    /// It purges the key's tag (`TieredCache.purge(tag:)`).
    case purge
}

/// How soon one instance's write (or purge) leaves the other instances' memory: 10
/// "instances" (each a `TieredCache` on its own store and pool, in this process so that one
/// clock times them) hold a key in memory (read from the shared tier); one writes a new version
/// (or purges the key's tag), and each other drops its copy (an `invalidated` report is made
/// only for a copy dropped). Reports the time from the call (its own round trip included) to
/// each report.
private func coherence(_ action: CoherenceAction, postgres: Postgres, report: Report, quick: Bool) async throws {
    let instances = 10
    let rounds = quick ? 5 : 30
    let what = action == .write ? "write" : "purge"
    let does = action == .write ? "writes a key" : "purges the tag of a key"
    report.section("Fleet: \(instances) instances, one \(does) the others hold in memory, x \(rounds)")
    let scenario = "fleet \(what) coherence"
    report.scenario(scenario, detail: "ms from a \(what)'s call to its copies leaving the others' memory")
    progress("fleet \(what) coherence")
    var gaps: [Double] = []
    var missed = 0
    try await withPostgresStores(port: postgres.port, count: instances) { stores in
        let caches = stores.map { TieredCache(stores: [$0]) }
        let heard = Heard()
        // The coordinators' events carry each cache's `invalidated` reports.
        let coordinators = caches.map { cache in
            var configuration = RequestCoordinator.Configuration()
            configuration.cache = cache
            return RequestCoordinator(transport: CurlTransport(), configuration: configuration)
        }
        let listeners = coordinators.dropFirst().map { coordinator in
            let events = coordinator.events(bufferingNewest: 1_000)
            return Task {
                for await event in events {
                    guard let cache = event.kind.cacheEvent, cache.name == .invalidated, let key = cache.key
                    else { continue }
                    let now = ContinuousClock.now
                    heard.times.withLock { $0[key, default: []].append(now) }
                }
            }
        }
        defer { for listener in listeners { listener.cancel() } }
        func entry(tag: String) -> CachedResponse {
            CachedResponse(
                status: .ok, headerFields: [.contentType: "application/json", HTTPField.Name("Surrogate-Key")!: tag],
                body: Data(repeating: 0x61, count: 1_024), requestTime: Date(), responseTime: Date())
        }
        // Every store listens once it has made a call.
        for cache in caches { _ = await cache.lookup(CacheKey("GET https://api.example.com/warm-up")) }
        try await Task.sleep(for: .milliseconds(500))
        for round in 0..<rounds {
            let key = CacheKey("GET https://api.example.com/coherence/\(getpid())/\(what)/\(round)")
            let tag = "coherence-\(getpid())-\(what)-\(round)"
            // One instance stores the key; the others read it from the shared tier into memory.
            await caches[0].store(entry(tag: tag), for: key, in: .all)
            // Its announcement passes first: a lookup it overlaps does not copy what it read.
            try await Task.sleep(for: .milliseconds(100))
            for cache in caches.dropFirst() where await cache.lookup(key)?.tier != .shared { missed += 1 }
            try await Task.sleep(for: .milliseconds(100))
            heard.times.withLock { $0[key.description] = nil }
            let written = ContinuousClock.now  // from the call: its own round trip counts
            switch action {
            case .write: await caches[0].store(entry(tag: tag), for: key, in: .all)
            case .purge: try await caches[0].purge(tag: tag)
            }
            let deadline = ContinuousClock.now + .seconds(2)
            while heard.times.withLock({ $0[key.description]?.count ?? 0 }) < instances - 1,
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(1))
            }
            let times = heard.times.withLock { $0[key.description] ?? [] }
            missed += instances - 1 - times.count
            for time in times {
                let gap = written.duration(to: time)
                gaps.append(max(0, Double(gap.components.seconds) * 1e3 + Double(gap.components.attoseconds) / 1e15))
            }
        }
        for coordinator in coordinators { await coordinator.shutdown() }
    }
    _ = report.add(
        scenario, "notified (LISTEN/NOTIFY)", unit: "ms p99", samples: [percentile(gaps, 0.99)],
        notes: [
            "ms p50": percentile(gaps, 0.5), "ms max": gaps.max() ?? 0, "copies": Double(gaps.count),
            "missed": Double(missed),
        ],
        higherIsBetter: false)
}

/// The shared tier's size bound on a large table: a million rows (100,000 with `--quick`)
/// written by the server, the bound set to 95% of them, then one write that starts an
/// eviction. Reports the time until the bound holds, each batch's mean time, and, for
/// comparison, the time of the one statement each batch ran before (it ranked the whole table).
private func evictionAtScale(postgres: Postgres, report: Report, quick: Bool) async throws {
    let rows = quick ? 100_000 : 1_000_000
    report.section("Shared tier eviction: \(rows) rows, the bound at 95% of their bytes")
    // Filling and vacuuming take longer than the store's statement_timeout: a pool of its own.
    let admin = PostgresClient(configuration: postgresConfiguration(port: postgres.port, connections: 1))
    let adminPool = Task { await admin.run() }
    defer { adminPool.cancel() }
    func execute(_ query: PostgresQuery) async throws {
        for try await _ in try await admin.query(query) {}
    }
    func number(_ query: PostgresQuery) async throws -> Int {
        var value: Int64 = 0
        for try await row in try await admin.query(query).decode(Int64.self) { value = row }
        return Int(value)
    }
    try await withPostgresStore(port: postgres.port) { store in try await store.prepare() }
    try await execute("TRUNCATE courier_cache_entries")
    progress("fleet: filling \(rows) rows")
    try await execute(
        """
        INSERT INTO courier_cache_entries
        SELECT sha256(i::text::bytea), 'GET https://api.example.com/evict/' || i, NULL, 200, ''::bytea,
            repeat('x', 200)::bytea, 0, 0, NULL, 300 + i % 64, 0,
            clock_timestamp() - interval '1 day' + i * interval '1 millisecond',
            sha256(('https://api.example.com/evict/' || i)::bytea), '{}'::text[], NULL
        FROM generate_series(1, \(rows)) AS i
        """)
    try await execute("VACUUM ANALYZE courier_cache_entries")  // what autovacuum does on its own
    let total = try await number("SELECT sum(size)::int8 FROM courier_cache_entries")
    let bound = total / 100 * 95
    // The statement a batch ran before this version: rank every row by last access.
    let rankStarted = ContinuousClock.now
    _ = try await number(
        """
        SELECT count(*)::int8 FROM (
            SELECT key_digest FROM (
                SELECT key_digest, last_access,
                    sum(size) OVER (ORDER BY last_access DESC, key_digest DESC) AS newer_bytes
                FROM courier_cache_entries
            ) ranked
            WHERE newer_bytes > \(Int64(bound))
            ORDER BY last_access ASC
            LIMIT 500) oldest
        """)
    let rankMilliseconds = (ContinuousClock.now - rankStarted).seconds * 1_000

    progress("fleet: evicting")
    var configuration = PostgresCacheStore.Configuration()
    configuration.maximumBytes = bound
    configuration.evictionCheckInterval = 0  // the next write checks the bound
    let (seconds, left, removed) = try await withPostgresStore(port: postgres.port, configuration: configuration) {
        store in
        let started = ContinuousClock.now
        let entry = CachedResponse(
            status: .ok, headerFields: [:], body: Data("{}".utf8), requestTime: Date(), responseTime: Date())
        try await store.store(entry, for: CacheKey("GET https://api.example.com/evict/start"))
        var left = total
        while left > bound, ContinuousClock.now - started < .seconds(300) {
            try await Task.sleep(for: .milliseconds(100))  // each poll sums the index too
            left = try await number("SELECT coalesce(sum(size), 0)::int8 FROM courier_cache_entries")
        }
        let seconds = (ContinuousClock.now - started).seconds
        let removed = rows + 1 - (try await number("SELECT count(*)::int8 FROM courier_cache_entries"))
        return (seconds, left, removed)
    }
    try await execute("TRUNCATE courier_cache_entries")  // a DELETE of them all outlasts a call's bound
    guard left <= bound else {
        throw BenchError("the shared tier's eviction did not reach its bound in 300 s (\(left) > \(bound) bytes)")
    }
    let batches = (removed + 499) / 500
    report.add(
        "shared tier eviction", "until the bound holds", unit: "ms", samples: [seconds * 1_000],
        notes: [
            "rows removed": Double(removed), "batches": Double(batches),
            "ms per batch": seconds * 1_000 / Double(max(batches, 1)),
            "old ranking statement ms": rankMilliseconds,
        ], higherIsBetter: false)
}

/// The connection settings of the benchmark's cluster.
func postgresConfiguration(port: Int, connections: Int) -> PostgresClient.Configuration {
    var configuration = PostgresClient.Configuration(
        host: "127.0.0.1", port: port, username: "postgres", password: nil, database: "postgres", tls: .disable)
    configuration.options.maximumConnections = connections
    return configuration
}

/// Runs `body` with a store on its own pool, then shuts the pool down.
func withPostgresStore<T>(
    port: Int, connections: Int = 4, configuration: PostgresCacheStore.Configuration = .init(),
    _ body: (PostgresCacheStore) async throws -> T
) async throws -> T {
    let store = PostgresCacheStore(
        postgres: postgresConfiguration(port: port, connections: connections), configuration: configuration)
    let pool = Task { await store.run() }
    defer { pool.cancel() }
    return try await body(store)
}

/// Hits of 10 KB entries from memory, disk and PostgreSQL, one caller: operations/s and the
/// latency of one hit; PostgreSQL also with 16 callers at once (its pool has 16 connections),
/// as a server's concurrent requests read it.
private func sharedTierHits(postgres: Postgres, report: Report, quick: Bool, runs: Int) async throws {
    report.section("Cache tiers: hits/s (median of \(runs)) and one hit's latency; 10 KB entries")
    let count = quick ? 300 : 2_000
    let keys = (0..<count).map { CacheKey("GET https://api.example.com/fleet-hits/\($0)") }
    let entry = CachedResponse(
        status: .ok, headerFields: [.contentType: "application/json", .eTag: "\"abc\""],
        body: Data(repeating: UInt8(ascii: "x"), count: 10_240), requestTime: Date(), responseTime: Date())
    let root = NSTemporaryDirectory() + "courier-bench-tiers-\(getpid())"
    let undo = Cleanup.removes(root)
    defer {
        try? FileManager.default.removeItem(atPath: root)
        Cleanup.done(undo)
    }
    let memory = TieredCache(memory: .init(totalCost: 1 << 30, count: 20_000))
    let disk = try DiskCache(directory: root, options: .init(sizeLimit: 1 << 30))
    var configuration = PostgresCacheStore.Configuration()
    configuration.timeout = .seconds(5)
    try await withPostgresStore(port: postgres.port, connections: 16, configuration: configuration) { shared in
        try await shared.removeAll()
        for key in keys {
            await memory.store(entry, for: key, in: .memory)
            try await disk.store(entry, for: key)
            try await shared.store(entry, for: key)
        }
        /// Hits of every key in order, by `callers` tasks at once: operations/s per run, and
        /// every hit's latency in microseconds.
        func measure(callers: Int, _ hit: @escaping @Sendable (CacheKey) async throws -> Bool) async throws
            -> (rates: [Double], latencies: [Double])
        {
            var rates: [Double] = []
            var latencies: [Double] = []
            for _ in 0..<runs {
                let start = ContinuousClock.now
                let measured = try await withThrowingTaskGroup(of: [Double].self) { group in
                    for caller in 0..<callers {
                        group.addTask {
                            var mine: [Double] = []
                            for index in stride(from: caller, to: keys.count, by: callers) {
                                let before = ContinuousClock.now
                                guard try await hit(keys[index]) else { throw BenchError("tier lost entry \(index)") }
                                mine.append((ContinuousClock.now - before).seconds * 1e6)
                            }
                            return mine
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                rates.append(Double(keys.count) / (ContinuousClock.now - start).seconds)
                latencies += measured
            }
            return (rates, latencies)
        }
        func notes(_ latencies: [Double]) -> [String: Double] {
            ["us p50": percentile(latencies, 0.5), "us p99": percentile(latencies, 0.99)]
        }
        progress("tier hits: memory")
        let memoryHits = try await measure(callers: 1) { await memory.lookup($0, in: .memory) != nil }
        progress("tier hits: disk")
        let diskHits = try await measure(callers: 1) { try await disk.entry(for: $0) != nil }
        progress("tier hits: PostgreSQL")
        let sharedHits = try await measure(callers: 1) { try await shared.entry(for: $0) != nil }
        progress("tier hits: PostgreSQL, 16 callers")
        let sharedParallel = try await measure(callers: 16) { try await shared.entry(for: $0) != nil }
        let scenario = "tier hit 10 KB"
        let reference = report.add(
            scenario, "memory tier (TieredCache)", unit: "ops/s", samples: memoryHits.rates,
            notes: notes(memoryHits.latencies))
        report.add(
            scenario, "disk tier (DiskCache)", unit: "ops/s", samples: diskHits.rates, reference: reference,
            notes: notes(diskHits.latencies))
        report.add(
            scenario, "shared tier (\(postgres.version))", unit: "ops/s",
            samples: sharedHits.rates, reference: reference, notes: notes(sharedHits.latencies))
        report.add(
            scenario, "shared tier, 16 callers at once", unit: "ops/s", samples: sharedParallel.rates,
            reference: reference, notes: notes(sharedParallel.latencies))
        try await shared.removeAll()
    }
}

/// How soon the loads waiting on a fleet-wide lease answer once its holder stored the answer:
/// a holder and 4 waiting "processes" (each with its own store and pool, in this process, so
/// that one clock times them all) load one cold URL of the slow origin, the waiters 300 ms
/// after the holder. Reports the time from the end of the holder's write to the shared tier
/// (it gives the lease back after it) to each waiter's answer, with the store's notifications
/// and with polling alone.
private func collapseWakeUp(nginx: Nginx, postgres: Postgres, report: Report, quick: Bool) async throws {
    let rounds = quick ? 3 : 25
    let waiterCount = 4
    report.section("Fleet: 1 lease holder and \(waiterCount) waiting processes x \(rounds) cold URLs")
    let scenario = "fleet collapse wake-up"
    report.scenario(scenario, detail: "ms from the holder's write to each waiter's answer, p99; lower is better")
    var polled: Figure?
    for notified in [false, true] {
        progress("fleet wake-up: \(notified ? "notifications" : "polling")")
        let tag = "wake-\(notified ? "notified" : "polled")-\(getpid())"
        var gaps: [Double] = []
        var sources: [String: Int] = [:]
        var failures = 0
        try await withPostgresStores(port: postgres.port, count: waiterCount + 1) { stores in
            func coordinator(_ store: any CacheStore) -> RequestCoordinator {
                var configuration = RequestCoordinator.Configuration()
                configuration.cache = TieredCache(stores: [store])
                return RequestCoordinator(transport: CurlTransport(), configuration: configuration)
            }
            // The holder's store notes its writes; it waits on nothing, so polling is moot.
            let written = PollingOnly(store: stores[0])
            let holder = coordinator(written)
            let waiters = stores.dropFirst().map { notified ? coordinator($0) : coordinator(PollingOnly(store: $0)) }
            for round in 0..<rounds {
                let resource = FleetResource(base: nginx.base, tag: tag, round: round, collapsing: true)
                written.lastWrite.withLock { $0 = nil }
                let held = Task { () -> ContinuousClock.Instant in
                    _ = try await resource.load(using: holder)
                    return try written.lastWrite.withLock {
                        try $0 ?? { throw BenchError("the holder stored nothing") }()
                    }
                }
                try await Task.sleep(for: .milliseconds(300))
                let waited = waiters.map { waiter in
                    Task { () -> (ContinuousClock.Instant, ResponseSource)? in
                        guard let loaded = try? await resource.loadResponse(using: waiter) else { return nil }
                        return (.now, loaded.source)
                    }
                }
                let holderWrote = try await held.value
                for load in waited {
                    guard let (answered, source) = await load.value else {
                        failures += 1
                        continue
                    }
                    sources["\(source)", default: 0] += 1
                    let gap = holderWrote.duration(to: answered)
                    gaps.append(
                        max(0, Double(gap.components.attoseconds) / 1e15 + Double(gap.components.seconds) * 1e3))
                }
            }
            await holder.shutdown()
            for waiter in waiters { await waiter.shutdown() }
        }
        let notes: [String: Double] = [
            "ms p50": percentile(gaps, 0.5), "ms max": gaps.max() ?? 0, "waits": Double(gaps.count),
            "failures": Double(failures), "from network": Double(sources["network", default: 0]),
        ]
        let figure = report.add(
            scenario, notified ? "notified (LISTEN/NOTIFY)" : "polling alone", unit: "ms p99",
            samples: [percentile(gaps, 0.99)], reference: polled, notes: notes, higherIsBetter: false)
        if !notified { polled = figure }
    }
}

/// When each instance reported each key `invalidated`.
private final class Heard: Sendable {
    let times = Mutex<[String: [ContinuousClock.Instant]]>([:])
}

/// Runs `body` with `count` stores, each on a pool of its own (as many processes would have),
/// then shuts the pools down.
private func withPostgresStores<T>(
    port: Int, count: Int, _ body: ([PostgresCacheStore]) async throws -> T
) async throws -> T {
    var configuration = PostgresCacheStore.Configuration()
    configuration.timeout = .seconds(2)
    let stores = (0..<count).map { _ in
        PostgresCacheStore(postgres: postgresConfiguration(port: port, connections: 4), configuration: configuration)
    }
    let pools = stores.map { store in Task { await store.run() } }
    defer { for pool in pools { pool.cancel() } }
    return try await body(stores)
}

/// A leasing store that does not notify (the loads waiting through it poll, as they did
/// before) and notes when its last write ended (its announcement left then).
private final class PollingOnly: CacheLeasing {
    let store: PostgresCacheStore
    let lastWrite = Mutex<ContinuousClock.Instant?>(nil)
    init(store: PostgresCacheStore) { self.store = store }
    var tier: CacheTier { store.tier }
    func entry(for key: CacheKey) async throws -> CachedResponse? { try await store.entry(for: key) }
    func store(_ response: CachedResponse, for key: CacheKey) async throws {
        try await store.store(response, for: key)
        lastWrite.withLock { $0 = .now }
    }
    func removeEntry(for key: CacheKey) async throws { try await store.removeEntry(for: key) }
    func removeExpired(now: Date) async throws { try await store.removeExpired(now: now) }
    func removeAll() async throws { try await store.removeAll() }
    func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease? {
        try await store.acquireLease(on: key, for: duration)
    }
    func releaseLease(_ lease: CacheLease) async throws { try await store.releaseLease(lease) }
}

/// What one fleet member measured.
struct FleetRun: Codable, Sendable {
    var loads: Int
    var failures: Int
    /// Seconds from each round's start to its load's end.
    var latencies: [Double]
    /// Loads by the source that answered them (network, shared, ...).
    var sources: [String: Int]
}

/// N processes, each loading the same cold URLs in lockstep (every round starts at the same
/// instant in every process), through memory -> PostgreSQL, with and without fleet-wide
/// collapsing. The origin is nginx's `/fleet/` (about a second per answer, cacheable for a
/// minute), whose access log counts what reached it.
private func fleetStampede(nginx: Nginx, postgres: Postgres, report: Report, quick: Bool) throws {
    let processes = quick ? 3 : 6
    let rounds = quick ? 2 : 5
    report.section("Fleet: \(processes) processes x \(rounds) cold URLs at once, origin ~1 s per answer")
    let scenario = "fleet \(processes)x\(rounds) cold"
    report.scenario(scenario, detail: "memory -> PostgreSQL in every process; requests the origin saw, lower is better")
    var plain: Figure?
    for collapsing in [false, true] {
        let tag = "\(collapsing ? "collapsed" : "plain")-\(getpid())"
        progress("fleet: \(processes) processes, \(collapsing ? "collapsing" : "no collapsing")")
        // Every child connects and prepares first; the first round starts 3 s from now.
        let start = Date().timeIntervalSince1970 + 3
        let children = try (0..<processes).map { _ in
            try JSONChildProcess<FleetRun>(arguments: [
                "--fleet-child", "\(postgres.port)", nginx.base, tag, "\(rounds)", collapsing ? "collapse" : "plain",
                "\(start)",
            ])
        }
        let results = try children.map { try $0.wait() }
        let originRequests = nginx.fleetRequests(containing: "r=\(tag)-")
        let latencies = results.flatMap(\.latencies)
        var sources: [String: Int] = [:]
        for result in results { sources.merge(result.sources, uniquingKeysWith: +) }
        let notes: [String: Double] = [
            "loads": Double(results.reduce(0) { $0 + $1.loads }),
            "failures": Double(results.reduce(0) { $0 + $1.failures }),
            "s p50": percentile(latencies, 0.5), "s max": latencies.max() ?? 0,
            "from network": Double(sources["network", default: 0]),
            "from shared": Double(sources["shared", default: 0]),
        ]
        let name = collapsing ? "collapsingAcrossFleet" : "shared tier, no collapsing"
        let figure = report.add(
            scenario, name, unit: "origin requests", samples: [Double(originRequests)], reference: plain, notes: notes,
            higherIsBetter: false)
        if !collapsing { plain = figure }
    }
}

/// This executable started again in a child mode (`--fleet-child`, `--purge-child`) that ends
/// by printing one JSON line; ``wait()`` decodes it.
struct JSONChildProcess<Output: Decodable> {
    let process = Process()
    let pipe = Pipe()

    init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
        process.arguments = arguments
        process.standardOutput = pipe
        try process.run()
    }

    func wait() throws -> Output {
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = String(decoding: output, as: UTF8.self).split(separator: "\n").last,
            let run = try? JSONDecoder().decode(Output.self, from: Data(line.utf8))
        else {
            throw BenchError("a child (\(process.arguments?.first ?? "")) failed (exit \(process.terminationStatus))")
        }
        return run
    }
}

/// `/fleet/medium.json?r=<tag>-<round>` as bytes, cached for a minute by its `Cache-Control`,
/// in every tier, collapsed across the fleet or not.
private struct FleetResource: Resource {
    typealias Response = Data
    let base: String
    let tag: String
    let round: Int
    let collapsing: Bool

    var endpoint: Endpoint { Endpoint(base, path: "/fleet/medium.json", query: ["r": "\(tag)-\(round)"]) }
    var cachePolicy: CachePolicy {
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(60))
        return collapsing ? policy.collapsingAcrossFleet(wait: .seconds(10), lease: .seconds(10)) : policy
    }
}

/// Fleet-member mode: `--fleet-child PORT BASE TAG ROUNDS collapse|plain START`. Round `r`
/// loads `BASE/fleet/medium.json?r=TAG-r` at `START + 2.5 r` seconds (wall clock), so that every
/// member asks at once; prints one `FleetRun` JSON line.
func runFleetChild(arguments: [String]) async throws {
    guard arguments.count == 6, let port = Int(arguments[0]), let rounds = Int(arguments[3]),
        let start = Double(arguments[5])
    else { throw BenchError("bad --fleet-child arguments: \(arguments)") }
    let collapsing = arguments[4] == "collapse"
    var storeConfiguration = PostgresCacheStore.Configuration()
    storeConfiguration.timeout = .seconds(2)
    let run = try await withPostgresStore(port: port, configuration: storeConfiguration) { store in
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        let coordinator = RequestCoordinator(transport: CurlTransport(), configuration: configuration)
        var run = FleetRun(loads: 0, failures: 0, latencies: [], sources: [:])
        for round in 0..<rounds {
            let roundStart = start + 2.5 * Double(round)
            let wait = roundStart - Date().timeIntervalSince1970
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            run.loads += 1
            do {
                let resource = FleetResource(
                    base: arguments[1], tag: arguments[2], round: round, collapsing: collapsing)
                let loaded = try await resource.loadResponse(using: coordinator)
                run.sources["\(loaded.source)", default: 0] += 1
            } catch {
                run.failures += 1
                FileHandle.standardError.write(Data("fleet member: round \(round): \(error)\n".utf8))
            }
            run.latencies.append(Date().timeIntervalSince1970 - roundStart)
        }
        await coordinator.shutdown()
        return run
    }
    print(String(decoding: try JSONEncoder().encode(run), as: UTF8.self))
}
#endif
