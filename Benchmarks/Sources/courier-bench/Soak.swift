import Courier
import Foundation
import Synchronization

/// The soak's settings: `--soak-loads`, `--soak-concurrency`, `--soak-seconds`, `--soak-seed`.
struct SoakOptions: Sendable {
    var loads = 100_000
    var concurrency = 64
    /// An upper bound on the run: past it no new load starts (those in flight still end).
    var seconds = 900
    var seed: UInt64 = 1
    /// Each attempt's total time (`Resource.timeout`), so that a stalled answer ends.
    let attemptTimeout: Duration = .seconds(1)

    /// How long one load may take before it counts as one that never ends: three attempts of
    /// `attemptTimeout`, two `Retry-After: 1` waits, and 10 s for a busy machine.
    /// `--soak-load-bound` sets another (below 1 s, it shows the soak failing on stalls).
    var loadBound: Duration = .seconds(1) * 3 + .seconds(2) + .seconds(10)

    init(quick: Bool, value: (String) -> String?) throws {
        if quick {
            loads = 10_000
            seconds = 45
        }
        if let text = value("--soak-loads") {
            guard let number = Int(text), number > 0 else { throw BenchError("--soak-loads takes a positive number") }
            loads = number
        }
        if let text = value("--soak-concurrency") {
            guard let number = Int(text), number > 0 else {
                throw BenchError("--soak-concurrency takes a positive number")
            }
            concurrency = number
        }
        if let text = value("--soak-seconds") {
            guard let number = Int(text), number > 0 else { throw BenchError("--soak-seconds takes a positive number") }
            seconds = number
        }
        if let text = value("--soak-load-bound") {
            guard let number = Double(text), number > 0 else { throw BenchError("--soak-load-bound takes seconds") }
            loadBound = .milliseconds(Int64(number * 1_000))
        }
        if let text = value("--soak-seed") {
            guard let number = UInt64(text) else { throw BenchError("--soak-seed takes a number") }
            seed = number
        }
    }
}

/// `GET /small/N` or `/medium/N` on the fault server: the bytes, with a timeout per attempt and
/// everything else (retries, coalescing) as a default coordinator does it.
struct SoakResource: Resource {
    typealias Response = Data
    let base: String
    let index: Int
    let seed: UInt64
    let attemptTimeout: Duration

    var endpoint: Endpoint { Endpoint(base, path: SoakPayloads.path(forLoad: index), query: ["seed": "\(seed)"]) }
    var timeout: Duration? { attemptTimeout }
}

/// What one soak measured.
struct SoakRun: Sendable {
    var options: SoakOptions
    var outcomes: SoakTally.State
    var samples: SoakSamples
    var seconds: Double
    var server: FaultServerCounts
    var cpuSeconds: Double
    /// Loads ended after the worker gave up on them (they were cancelled).
    var lateEndings: Int
    var shutdownEnded: Bool

    var loadsPerSecond: Double { Double(outcomes.ended) / max(seconds, 1e-9) }
}

/// `--soak`: `options.loads` loads at `options.concurrency` through a default
/// `RequestCoordinator` against a ``FaultServer``, with this process's descriptors, threads and
/// memory sampled as it goes. Returns why it failed (empty when it passed).
func soak(options: SoakOptions, report: Report) async throws -> [String] {
    report.section(
        "Soak: \(options.loads) load()s at c=\(options.concurrency) against a server mixing faults with good answers"
            + " (seed \(options.seed))")
    let server = try FaultServerProcess.start(seed: options.seed)
    let transport = CurlTransport()
    let coordinator = RequestCoordinator(transport: transport)
    let tally = SoakTally()
    let watches = (0..<options.concurrency).map { _ in LoadWatch() }
    var samples = SoakSamples(before: .now())
    let start = ContinuousClock.now
    let cpuBefore = cpuSeconds()
    let deadline = start + .seconds(options.seconds)
    let base = server.base
    let monitor = Task { await watchdog(watches, bound: options.loadBound, loads: options.loads, tally: tally) }

    await withTaskGroup(of: Void.self) { group in
        for watch in watches {
            group.addTask {
                while true {
                    let index = tally.claim()
                    guard index < options.loads, ContinuousClock.now < deadline else { return }
                    let resource = SoakResource(
                        base: base, index: index, seed: options.seed, attemptTimeout: options.attemptTimeout)
                    let began = ContinuousClock.now
                    let outcome = await watch.run(index) {
                        do {
                            return .success(try await resource.load(using: coordinator))
                        } catch let error as ServiceError {
                            return .failure(error.code.description)
                        } catch {
                            return .untypedError(String(describing: type(of: error)))
                        }
                    }
                    let ended = tally.record(outcome, load: index, duration: ContinuousClock.now - began)
                    if ended == max(options.loads / 10, 1) { tally.atTenPercent.withLock { $0 = .now() } }
                }
            }
        }
    }
    let seconds = (ContinuousClock.now - start).seconds
    let cpu = cpuSeconds() - cpuBefore
    monitor.cancel()
    for sample in await monitor.value { samples.record(sample) }
    samples.atTenPercent = tally.atTenPercent.withLock { $0 }
    samples.atEnd = .now()
    samples.record(samples.atEnd!)
    let shutdownEnded = await finishes(within: .seconds(10)) { await transport.shutdown(cancellingInFlight: true) }
    samples.afterShutdown = .now()
    progress(nil)
    let run = SoakRun(
        options: options, outcomes: tally.snapshot, samples: samples, seconds: seconds, server: try server.stop(),
        cpuSeconds: cpu,
        lateEndings: watches.reduce(0) { $0 + $1.lateEndings.load(ordering: .relaxed) }, shutdownEnded: shutdownEnded)
    return run.report(to: report)
}

/// Every 100 ms, gives up on loads older than `bound`; every second, samples the process and
/// shows progress. Returns the samples when cancelled.
private func watchdog(_ watches: [LoadWatch], bound: Duration, loads: Int, tally: SoakTally) async -> [ProcessSample] {
    var samples: [ProcessSample] = []
    var tick = 0
    while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(100))
        let now = ContinuousClock.now
        for watch in watches { _ = watch.expire(olderThan: bound, now: now) }
        tick += 1
        if tick % 10 == 0 {
            samples.append(.now())
            progress("soak: \(tally.snapshot.ended)/\(loads) loads ended")
        }
    }
    return samples
}

/// Runs `operation` and waits for it at most `limit`; returns whether it ended in time.
private func finishes(within limit: Duration, _ operation: @escaping @Sendable () async -> Void) async -> Bool {
    final class Flag: Sendable { let value = Atomic<Bool>(false) }
    let done = Flag()
    Task {
        await operation()
        done.value.store(true, ordering: .releasing)
    }
    let deadline = ContinuousClock.now + limit
    while !done.value.load(ordering: .acquiring), ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(20))
    }
    return done.value.load(ordering: .acquiring)
}
