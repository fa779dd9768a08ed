import Courier
import Foundation
import Synchronization

/// `--filter resilience`: each upstream-protection policy on and off, in one run, against
/// an upstream in a child process (``ResilienceUpstream``) whose behaviour each row picks:
/// - retry budget: an upstream failing every request, requests per load (target 1.25);
/// - circuit breaker: the same upstream, the time a load takes once the circuit is open
///   (target under a millisecond) against the time without a circuit, and requests per load;
///   and the time from the upstream's recovery to the first load that succeeds;
/// - adaptive concurrency: an upstream whose answers slow down with its load, 64 callers: loads
///   per second and p99 at fixed limits (a sweep) and with the adaptive limit (target: 0.9x the
///   best fixed limit's loads per second, p99 bounded), and against a fast upstream, the
///   default fixed limit and the adaptive one (what the adaptive limit costs a healthy host);
/// - hedging: an upstream that delays one answer in 20 by 200 ms, 8 callers: p99 with and
///   without hedging, and the extra requests hedges sent (at most 5% by default);
/// - deadlines: an upstream that stalls after its head, the time a load takes to end.
func resilience(report: Report, quick: Bool, runs: Int) async throws {
    report.section("Resilience: each policy on and off, against an upstream in a child process")
    let upstream = try ResilienceUpstreamProcess()
    let token = Cleanup.register { upstream.stop() }
    defer {
        upstream.stop()
        Cleanup.done(token)
    }
    let transport = CurlTransport()
    let control = Control(transport: transport, base: upstream.base)
    let loads = quick ? 200 : 500

    // Retry budget: sequential loads of an upstream that fails every request, no circuit.
    let budgetScenario = "resilience: retry budget, upstream failing every request (\(loads) load()s)"
    var perLoad: [String: Double] = [:]
    for (label, budget) in [("budget off", RetryBudget?.none), ("budget on (default)", RetryBudget.default)] {
        progress("resilience: \(label)")
        try await control.get("/control/reset")
        let coordinator = RequestCoordinator(
            transport: transport, configuration: .resilience(budget: budget, breaker: nil))
        for _ in 0..<loads { _ = try? await Probe(base: upstream.base, path: "/fail").load(using: coordinator) }
        perLoad[label] = Double(try await control.count("/fail")) / Double(loads)
        await coordinator.shutdown()
    }
    report.add(budgetScenario, "budget off", unit: "req/load", samples: [perLoad["budget off"]!])
    report.add(
        budgetScenario, "budget on (default)", unit: "req/load", samples: [perLoad["budget on (default)"]!],
        notes: ["target %": 125])

    // Circuit breaker: the same upstream; how long each load takes once the circuit opened.
    let circuitScenario = "resilience: circuit breaker, upstream failing every request (\(loads) load()s)"
    var offTimes: [Double] = []
    for (label, breaker) in [("circuit off", CircuitBreaker?.none), ("circuit on (default)", CircuitBreaker.default)] {
        progress("resilience: \(label)")
        try await control.get("/control/reset")
        let coordinator = RequestCoordinator(
            transport: transport, configuration: .resilience(budget: .default, breaker: breaker))
        var refused: [Double] = []
        var all: [Double] = []
        for _ in 0..<loads {
            let started = ContinuousClock.now
            var code: ServiceError.Code?
            do {
                _ = try await Probe(base: upstream.base, path: "/fail").load(using: coordinator)
            } catch {
                code = error.code
            }
            let micros = (ContinuousClock.now - started).seconds * 1e6
            all.append(micros)
            if code == .circuitOpen { refused.append(micros) }
        }
        let requests = Double(try await control.count("/fail")) / Double(loads)
        if breaker == nil {
            offTimes = all
            report.add(
                circuitScenario, "circuit off: each load", unit: "µs", samples: all,
                notes: ["p99": percentile(all, 0.99), "req/load": requests])
        } else {
            let reference = report.figures.last { $0.scenario == circuitScenario }
            report.add(
                circuitScenario, "circuit on: a refused load", unit: "µs", samples: refused, reference: reference,
                notes: [
                    "p99": percentile(refused, 0.99), "req/load": requests, "refused": Double(refused.count),
                    "target µs": 1_000,
                ], higherIsBetter: false, ratioLabel: "faster than")
        }
        await coordinator.shutdown()
    }
    _ = offTimes

    // Recovery: the circuit opened on a failing upstream, which then comes back.
    var recoveries: [Double] = []
    for run in 0..<runs {
        progress("resilience: recovery, run \(run + 1)/\(runs)")
        try await control.get("/control/down")
        let coordinator = RequestCoordinator(
            transport: transport, configuration: .resilience(budget: .default, breaker: .default))
        let probe = Probe(base: upstream.base, path: "/switch")
        while true {
            do {
                _ = try await probe.load(using: coordinator)
            } catch  where error.code == .circuitOpen {
                break
            } catch {}
        }
        try await control.get("/control/up")
        let back = ContinuousClock.now
        while (try? await probe.load(using: coordinator)) == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        recoveries.append((ContinuousClock.now - back).seconds * 1_000)
        await coordinator.shutdown()
    }
    report.add(
        "resilience: circuit breaker, recovery (loads every 10 ms)", "upstream back to first success", unit: "ms",
        samples: recoveries, notes: ["cool-down ms": 5_000])

    // Adaptive concurrency: 64 callers against an upstream whose answers slow down with its
    // load; fixed limits swept, then the adaptive one.
    let congestedScenario = "resilience: concurrency limit, upstream slowing with its load (64 callers)"
    let congestedLoads = quick ? 400 : 1_000
    var best: Figure?
    for limit in [2, 4, 8, 16, 64] {
        progress("resilience: fixed limit \(limit)")
        var configuration = RequestCoordinator.Configuration.resilience(budget: .default, breaker: .default)
        configuration.maximumLoadsPerHost = limit
        let (rate, p99) = try await congested(
            RequestCoordinator(transport: transport, configuration: configuration), base: upstream.base,
            loads: congestedLoads)
        let figure = report.add(
            congestedScenario, "fixed limit \(limit)", unit: "loads/s", samples: [rate], notes: ["p99 ms": p99])
        if figure.median > best?.median ?? 0 { best = figure }
    }
    progress("resilience: adaptive limit")
    var configuration = RequestCoordinator.Configuration.resilience(budget: .default, breaker: .default)
    configuration.adaptiveConcurrency = AdaptiveConcurrency()
    let adaptive = RequestCoordinator(transport: transport, configuration: configuration)
    // A first round finds the limit; the second is measured.
    _ = try await congested(adaptive, base: upstream.base, loads: congestedLoads / 2, shutsDown: false)
    let (rate, p99) = try await congested(adaptive, base: upstream.base, loads: congestedLoads)
    report.add(
        congestedScenario, "adaptive (AIMD, default)", unit: "loads/s", samples: [rate], reference: best,
        notes: ["p99 ms": p99, "target x": 0.9], ratioLabel: "the loads/s of")

    // What the adaptive limit costs a host that never slows down: 64 callers against `/ok`,
    // with the default fixed limit (256) and with the adaptive one, each after a settling round.
    let fastScenario = "resilience: concurrency limit, a fast upstream (64 callers)"
    var fixedFast: Figure?
    for (label, adaptiveConcurrency) in [
        ("fixed limit (default, 256)", AdaptiveConcurrency?.none), ("adaptive (AIMD, default)", AdaptiveConcurrency()),
    ] {
        progress("resilience: fast upstream, \(label)")
        var configuration = RequestCoordinator.Configuration.resilience(budget: .default, breaker: .default)
        configuration.adaptiveConcurrency = adaptiveConcurrency
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        _ = try await concurrently(coordinator, base: upstream.base, path: "/ok", loads: congestedLoads, callers: 64)
        let started = ContinuousClock.now
        let times = try await concurrently(
            coordinator, base: upstream.base, path: "/ok", loads: congestedLoads * 4, callers: 64)
        let rate = Double(times.count) / (ContinuousClock.now - started).seconds
        await coordinator.shutdown()
        let figure = report.add(
            fastScenario, label, unit: "loads/s", samples: [rate], reference: fixedFast,
            notes: ["p99 ms": percentile(times, 0.99)], ratioLabel: "the loads/s of")
        if fixedFast == nil { fixedFast = figure }
    }

    // Hedging: an upstream that delays one answer in 20 by 200 ms.
    let tailScenario = "resilience: hedging, upstream delaying 1 answer in 20 by 200 ms (8 callers)"
    let tailLoads = quick ? 1_000 : 2_000
    var withoutHedging: Figure?
    for (label, hedging) in [
        ("hedging off", Hedging?.none), ("hedging on (default: p95, 5%)", Hedging.default),
        ("hedging on (after 10 ms, 10%)", Hedging(delay: .fixed(.milliseconds(10)), maximumShare: 0.1)),
    ] {
        progress("resilience: \(label)")
        try await control.get("/control/reset")
        var configuration = RequestCoordinator.Configuration.resilience(budget: .default, breaker: .default)
        configuration.hedging = hedging
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        let times = try await concurrently(
            coordinator, base: upstream.base, path: "/tail", loads: tailLoads, callers: 8)
        await coordinator.shutdown()
        let extra = Double(try await control.count("/tail") - tailLoads) / Double(tailLoads) * 100
        let notes = ["p50 ms": percentile(times, 0.5), "extra req %": extra]
        if let withoutHedging {
            report.add(
                tailScenario, label, unit: "ms p99", samples: [percentile(times, 0.99)], reference: withoutHedging,
                notes: notes, higherIsBetter: false, ratioLabel: "the p99 of")
        } else {
            withoutHedging = report.add(
                tailScenario, label, unit: "ms p99", samples: [percentile(times, 0.99)], notes: notes,
                higherIsBetter: false)
        }
    }

    // Deadlines: an upstream that sends a head and stalls.
    let deadlineScenario = "resilience: deadline, upstream stalling after its head"
    var ended: [Double] = []
    var timedOut = 0
    let coordinator = RequestCoordinator(transport: transport)
    for _ in 0..<(quick ? 3 : 5) {
        let started = ContinuousClock.now
        do {
            _ = try await withDeadline(in: .milliseconds(500)) {
                try await Probe(base: upstream.base, path: "/stall").load(using: coordinator)
            }
        } catch let error as ServiceError {
            if error.code == .timedOut { timedOut += 1 }
        }
        ended.append((ContinuousClock.now - started).seconds * 1_000)
    }
    await coordinator.shutdown()
    report.add(
        deadlineScenario, "withDeadline(in: 500 ms)", unit: "ms", samples: ended,
        notes: ["timedOut": Double(timedOut), "without ms": 181_000])
    await transport.shutdown()
}

/// `loads` loads of `/congested` by 64 callers through `coordinator`: loads per second, and
/// the 99th percentile of their times in milliseconds.
private func congested(
    _ coordinator: RequestCoordinator, base: String, loads: Int, shutsDown: Bool = true
) async throws -> (Double, Double) {
    let started = ContinuousClock.now
    let times = try await concurrently(coordinator, base: base, path: "/congested", loads: loads, callers: 64)
    let seconds = (ContinuousClock.now - started).seconds
    if shutsDown { await coordinator.shutdown() }
    return (Double(times.count) / seconds, percentile(times, 0.99))
}

/// `loads` loads of `path` by `callers` callers through `coordinator`: each load's time, in
/// milliseconds.
private func concurrently(
    _ coordinator: RequestCoordinator, base: String, path: String, loads: Int, callers: Int
) async throws -> [Double] {
    final class Counter: Sendable { let next = Atomic<Int>(0) }
    let counter = Counter()
    return try await withThrowingTaskGroup(of: [Double].self) { group in
        for _ in 0..<callers {
            group.addTask {
                var times: [Double] = []
                while true {
                    let index = counter.next.add(1, ordering: .relaxed).oldValue
                    guard index < loads else { break }
                    let began = ContinuousClock.now
                    // A distinct URL per load: identical ones would share one transfer.
                    _ = try await Probe(base: base, path: path, query: "\(index)").load(using: coordinator)
                    times.append((ContinuousClock.now - began).seconds * 1_000)
                }
                return times
            }
        }
        return try await group.reduce(into: []) { $0 += $1 }
    }
}

/// A GET of one path of the upstream, with the coordinator's retry policy.
private struct Probe: Resource {
    typealias Response = Data
    let base: String
    let path: String
    var query: String?
    var endpoint: Endpoint {
        Endpoint(base, path: path, query: query.map { [URLQueryItem(name: "i", value: $0)] } ?? [])
    }
    var cachePolicy: CachePolicy { .networkOnly }
}

/// Requests to the upstream's control paths, straight through the transport (no circuit).
private struct Control {
    let transport: CurlTransport
    let base: String

    @discardableResult
    func get(_ path: String) async throws -> Data {
        let url = URL(string: base + path)!
        let request = HTTPRequest(method: .get, scheme: "http", authority: "\(url.host!):\(url.port!)", path: path)
        return try await transport.send(request).body
    }

    /// Requests to `path` since the last reset.
    func count(_ path: String) async throws -> Int {
        let counts = try JSONDecoder().decode([String: Int].self, from: try await get("/control/counts"))
        return counts[path] ?? 0
    }
}

extension RequestCoordinator.Configuration {
    /// Retries as by default but with pauses of a millisecond (the rows would otherwise wait
    /// out seconds of backoff), no cache; `budget` and `breaker` as given.
    fileprivate static func resilience(budget: RetryBudget?, breaker: CircuitBreaker?) -> Self {
        var configuration = Self()
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(1), jitter: 0)
        configuration.retryBudget = budget
        configuration.circuitBreaker = breaker
        configuration.cache = nil
        return configuration
    }
}

/// The value below which `fraction` of `values` fall (0 for none).
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}
