import Foundation

/// 10,000 `load()`s at once in one process (default configuration, distinct URLs, the small
/// payload): the time they take, peak RSS against the same loads 64 at a time, and failures
/// (there must be none). What the connection limit (64 per host) does not admit waits in the
/// transport's admission queue, outside curl.
func manyLoads(nginx: Nginx, report: Report, quick: Bool, runs: Int) throws {
    let loads = quick ? 2_000 : 10_000
    report.section("\(loads) concurrent load()s in one process: requests/s (median of \(runs)), peak RSS")
    let url = "\(nginx.base)/identity/small.json"
    let scenario = "\(loads) loads small identity"
    report.scenario(scenario, detail: "default configuration, distinct URLs, at \(loads) and at 64 at once")
    var results: [Int: [ClientRun]] = [:]
    for width in [64, loads] {
        for run in 0..<runs {
            progress("\(scenario): \(width) at once, run \(run + 1)/\(runs)")
            results[width, default: []].append(
                try spawnClient(.courierDefaults, url: url, concurrency: width, requests: loads, coding: .identity))
        }
    }
    func notes(_ runs: [ClientRun]) -> [String: Double] {
        [
            "MB RSS": median(runs.map { Double($0.peakRSSKilobytes) / 1024 }),
            "failures": Double(runs.reduce(0) { $0 + $1.failures }),
            "s": median(runs.map(\.seconds)),
        ]
    }
    let rate: ([ClientRun]) -> [Double] = { runs in runs.map { Double($0.requests) / max($0.seconds, 1e-9) } }
    let narrow = report.add(
        scenario, "load() defaults, 64 at once", unit: "req/s", samples: rate(results[64] ?? []),
        notes: notes(results[64] ?? []))
    var wide = notes(results[loads] ?? [])
    if let base = narrow.notes["MB RSS"], base > 0 { wide["RSS x vs 64"] = (wide["MB RSS"] ?? 0) / base }
    _ = report.add(
        scenario, "load() defaults, \(loads) at once", unit: "req/s", samples: rate(results[loads] ?? []),
        reference: narrow, notes: wide)
}
