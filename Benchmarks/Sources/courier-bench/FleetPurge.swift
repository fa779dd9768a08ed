#if Peers
import Courier
import CourierPostgresCache
import Foundation
import Synchronization

/// Purges across a fleet of processes: 10 child processes (each a coordinator with memory in
/// front of its own `PostgresCacheStore`, collapsing across the fleet) load two URLs of the
/// origin each round; this process then purges the first (hard) and, half a second later,
/// soft-purges the second, and every child loads the second 10 times at once.
///
/// - **Hard purge**: the time from the purge's call (wall clock, here) to each child's
///   `invalidated` event for its memory copy (wall clock, there): one clock for all, the
///   machine's. Target: 50 ms p99.
/// - **Soft purge under load**: the origin's requests for the soft-purged URL, less its first
///   (cold) one: one revalidation for the whole fleet is the target.
func fleetPurge(nginx: Nginx, postgres: Postgres, report: Report, quick: Bool) async throws {
    let processes = 10
    let rounds = quick ? 3 : 10
    report.section("Fleet: \(processes) processes; one more purges a URL they hold, x \(rounds)")
    let scenario = "fleet purge, \(processes) processes"
    report.scenario(scenario, detail: "hard: ms from the purge's call to the copies leaving each process's memory")
    progress("fleet purge: \(processes) processes")
    let tag = "purge-\(getpid())"
    // Every child connects and starts listening first; the first round starts 4 s from now.
    let start = Date().timeIntervalSince1970 + 4
    let children = try (0..<processes).map { _ in
        try JSONChildProcess<PurgeRun>(arguments: [
            "--purge-child", "\(postgres.port)", nginx.base, tag, "\(rounds)", "\(start)",
        ])
    }
    var purgedAt: [Double] = []
    var failures = 0
    try await withPostgresStore(port: postgres.port) { store in
        let cache = TieredCache(stores: [store])
        _ = await cache.lookup(CacheKey("GET https://api.example.com/warm-up"))
        for round in 0..<rounds {
            let roundStart = start + PurgeTimeline.round * Double(round)
            try await sleep(until: roundStart + PurgeTimeline.hardPurge)
            let called = Date().timeIntervalSince1970
            do {
                try await cache.purge(url: PurgeTimeline.url(nginx.base, tag, "hard", round))
            } catch {
                failures += 1
            }
            purgedAt.append(called)
            try await sleep(until: roundStart + PurgeTimeline.softPurge)
            do {
                try await cache.purge(url: PurgeTimeline.url(nginx.base, tag, "soft", round), soft: true)
            } catch {
                failures += 1
            }
        }
    }
    let results = try children.map { try $0.wait() }
    var gaps: [Double] = []
    var missed: [String] = []
    var late = 0
    var notInMemory = 0
    var early = 0
    for (child, result) in results.enumerated() {
        failures += result.failures
        for (round, heard) in result.heard.enumerated() where round < purgedAt.count {
            guard let heard else {
                // A copy stored after the purge's call was never purged, and one that never
                // reached memory had nothing to drop: neither is a miss.
                if let loaded = result.loaded[round], loaded > purgedAt[round] {
                    late += 1
                } else if !result.inMemory[round] {
                    notInMemory += 1
                } else {
                    let loaded = result.loaded[round].map { String(format: "%.3f s", $0 - purgedAt[round]) } ?? "never"
                    missed.append("child \(child), round \(round), loaded \(loaded) from the purge")
                }
                continue
            }
            // A copy that left before the purge was called left for another reason.
            if heard < purgedAt[round] { early += 1 } else { gaps.append((heard - purgedAt[round]) * 1_000) }
        }
    }
    // The origin's answers for each soft-purged URL: 200s (its cold load, collapsed across the
    // fleet) and 304s (revalidations of the stale entry by the fleet's 100 loads after the purge).
    let revalidations = (0..<rounds).map { round in
        Double(nginx.purgeRequests(containing: "r=\(tag)-soft-\(round) ", "\" 304 "))
    }
    let others = (0..<rounds).map { round in
        Double(nginx.purgeRequests(containing: "r=\(tag)-soft-\(round) ") - Int(revalidations[round]))
    }
    let cold = (0..<rounds).map { round in Double(nginx.purgeRequests(containing: "r=\(tag)-hard-\(round) ")) }
    _ = report.add(
        scenario, "hard purge (LISTEN/NOTIFY)", unit: "ms p99", samples: [percentile(gaps, 0.99)],
        notes: [
            "ms p50": percentile(gaps, 0.5), "ms max": gaps.max() ?? 0, "copies": Double(gaps.count),
            "missed": Double(missed.count), "loaded after the purge": Double(late),
            "not in memory": Double(notInMemory), "early": Double(early),
            "failures": Double(failures),
            "origin requests per cold URL": cold.reduce(0, +) / Double(max(1, rounds)),
        ],
        higherIsBetter: false)
    for line in missed { FileHandle.standardError.write(Data("fleet purge: no invalidation heard: \(line)\n".utf8)) }
    _ = report.add(
        scenario, "soft purge, \(processes * PurgeTimeline.softLoads) loads after it", unit: "revalidations per key",
        samples: [revalidations.reduce(0, +) / Double(max(1, rounds))],
        notes: [
            "max": revalidations.max() ?? 0, "rounds": Double(rounds),
            "other requests per key": others.reduce(0, +) / Double(max(1, rounds)),
        ],
        higherIsBetter: false)
}

/// When each round's steps happen, in seconds from its start, and its URLs.
enum PurgeTimeline {
    /// Rounds start this far apart.
    static let round = 3.0
    /// The parent's hard purge.
    static let hardPurge = 1.0
    /// The parent's soft purge.
    static let softPurge = 1.5
    /// The children's loads of the soft-purged URL.
    static let softLoads = 10
    static let loadAfterSoftPurge = 2.0

    static func name(_ tag: String, _ kind: String, _ round: Int) -> String { "\(tag)-\(kind)-\(round)" }

    static func url(_ base: String, _ tag: String, _ kind: String, _ round: Int) -> String {
        "\(base)/purge/medium.json?r=\(name(tag, kind, round))"
    }
}

/// Sleeps until the wall clock reads `time` (seconds since 1970).
private func sleep(until time: Double) async throws {
    let wait = time - Date().timeIntervalSince1970
    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
}

/// What a purge child saw: for each round, when its memory copy of the hard-purged URL left
/// (wall clock), or nil; when its load of that URL ended (nil: it failed); and whether its
/// memory held a copy 100 ms before the purge.
struct PurgeRun: Codable, Sendable {
    var heard: [Double?]
    var loaded: [Double?]
    var inMemory: [Bool]
    var failures: Int
}

/// `/purge/medium.json?r=<tag>-<kind>-<round>`: cacheable for a minute, then served stale for
/// another while revalidated; collapsed across the fleet.
private struct PurgedResource: Resource {
    typealias Response = Data
    let base: String
    let name: String
    var endpoint: Endpoint { Endpoint(base, path: "/purge/medium.json", query: ["r": name]) }
    var cachePolicy: CachePolicy { CachePolicy.http().collapsingAcrossFleet(wait: .seconds(5), lease: .seconds(5)) }
}

/// Purge-child mode: `--purge-child PORT BASE TAG ROUNDS START`. Each round (from `START`,
/// every 3 s): load the hard and the soft URL; note when the hard one's memory copy leaves;
/// after the soft purge, load the soft one 10 times at once. Prints one `PurgeRun` JSON line.
func runPurgeChild(arguments: [String]) async throws {
    guard arguments.count == 5, let port = Int(arguments[0]), let rounds = Int(arguments[3]),
        let start = Double(arguments[4])
    else { throw BenchError("bad --purge-child arguments: \(arguments)") }
    let base = arguments[1]
    let tag = arguments[2]
    var storeConfiguration = PostgresCacheStore.Configuration()
    storeConfiguration.timeout = .seconds(2)
    let run = try await withPostgresStore(port: port, configuration: storeConfiguration) { store in
        var configuration = RequestCoordinator.Configuration()
        let cache = TieredCache(stores: [store])
        configuration.cache = cache
        let coordinator = RequestCoordinator(transport: CurlTransport(), configuration: configuration)
        // Listening from now on (a store listens from its first call).
        _ = await cache.lookup(CacheKey("GET https://api.example.com/warm-up"))
        let invalidations = Mutex<[Double]>([])
        let events = coordinator.events(bufferingNewest: 1_000)
        let listener = Task {
            for await event in events where event.kind.cacheEvent?.name == .invalidated {
                let now = Date().timeIntervalSince1970
                invalidations.withLock { $0.append(now) }
            }
        }
        defer { listener.cancel() }
        var run = PurgeRun(heard: [], loaded: [], inMemory: [], failures: 0)
        for round in 0..<rounds {
            let roundStart = start + PurgeTimeline.round * Double(round)
            try await sleep(until: roundStart)
            let hard = PurgedResource(base: base, name: PurgeTimeline.name(tag, "hard", round))
            let soft = PurgedResource(base: base, name: PurgeTimeline.name(tag, "soft", round))
            do {
                _ = try await hard.load(using: coordinator)
                run.loaded.append(Date().timeIntervalSince1970)
                _ = try await soft.load(using: coordinator)
            } catch {
                run.failures += 1
            }
            if run.loaded.count == round { run.loaded.append(nil) }
            try await sleep(until: roundStart + PurgeTimeline.hardPurge - 0.1)
            let url = URL(string: PurgeTimeline.url(base, tag, "hard", round))!
            let key = CacheKey(request: HTTPRequest(method: .get, url: url), credentialHeaders: [])
            run.inMemory.append(await cache.lookup(key, in: .memory) != nil)
            try await sleep(until: roundStart + PurgeTimeline.loadAfterSoftPurge)
            // The hard purge's report: the first between the loads and the soft purge (one
            // before the purge's call is counted apart by the parent).
            let window = (roundStart + PurgeTimeline.hardPurge - 0.5)..<(roundStart + PurgeTimeline.softPurge)
            run.heard.append(invalidations.withLock { $0.first(where: window.contains) })
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<PurgeTimeline.softLoads {
                    group.addTask { (try? await soft.load(using: coordinator)) != nil }
                }
                for await ok in group where !ok { run.failures += 1 }
            }
        }
        // Let the last refresh finish before the coordinator goes.
        try await Task.sleep(for: .milliseconds(500))
        await coordinator.shutdown()
        return run
    }
    print(String(decoding: try JSONEncoder().encode(run), as: UTF8.self))
}
#endif
