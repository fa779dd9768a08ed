import Foundation

/// Requests/s, CPU per request and peak RSS for every client, each in its own child process,
/// for {small, medium} x {identity, gzip} x concurrency {1, 64}, and the medium payload in
/// brotli and zstd (`codingsOnly`: the medium payload's gzip, brotli and zstd rows alone).
func endToEnd(nginx: Nginx, report: Report, quick: Bool, runs: Int, codingsOnly: Bool = false) throws {
    report.section("End to end: requests/s (median of \(runs)), CPU per request, peak RSS; nginx on 127.0.0.1")
    let matrix: [(payload: String, coding: ResponseCoding)] = [
        ("small", .identity), ("small", .gzip), ("medium", .identity), ("medium", .gzip), ("medium", .brotli),
        ("medium", .zstd),
    ]
    for (payload, coding) in matrix where !codingsOnly || (payload == "medium" && coding != .identity) {
        for concurrency in [1, 64] {
            var requests =
                payload == "small" ? (concurrency == 1 ? 5_000 : 20_000) : (concurrency == 1 ? 2_000 : 5_000)
            if quick { requests /= 10 }
            let url = "\(nginx.base)/\(coding.folder)/\(payload).json"
            let scenario = "\(payload) \(coding.rawValue) c=\(concurrency)"
            report.scenario(scenario, detail: "\(requests) requests per run")
            var results: [Client: [ClientRun]] = [:]
            for client in Client.allCases where client.runs(in: scenario, coding: coding) {
                for index in 0..<runs {
                    progress("\(scenario): \(client.rawValue), run \(index + 1)/\(runs)")
                    let run = try spawnClient(
                        client, url: url, concurrency: concurrency, requests: requests, coding: coding)
                    // Every client must deliver the decoded payload, whatever the coding.
                    let size = (payload == "small" ? Payloads.small : Payloads.medium).count
                    guard run.bytes == (run.requests - run.failures) * size else {
                        throw BenchError(
                            "\(client.rawValue) in \(scenario) delivered \(run.bytes) bytes, not \(size) per load")
                    }
                    results[client, default: []].append(run)
                }
            }
            let raw = figure(for: .raw, results, scenario: scenario, report: report, reference: nil)
            let ahc = results[.asyncHTTPClient].map { rate($0) }
            for client in Client.allCases where client != .raw && client.runs(in: scenario, coding: coding) {
                var notes: [String: Double] = [:]
                if client.isCourier, let ahc, let mine = results[client] {
                    notes["x vs AHC"] = median(rate(mine)) / median(ahc)
                }
                if client == .transportTwoLoops, let one = results[.transportOneLoop], let mine = results[client] {
                    notes["x vs 1 loop"] = median(rate(mine)) / median(rate(one))
                }
                _ = figure(for: client, results, scenario: scenario, report: report, reference: raw, notes: notes)
            }
        }
    }
}

private func figure(
    for client: Client, _ results: [Client: [ClientRun]], scenario: String, report: Report, reference: Figure?,
    notes extra: [String: Double] = [:]
) -> Figure {
    let runs = results[client] ?? []
    var notes = extra
    notes["µs CPU/req"] = median(runs.map { $0.cpuSeconds * 1e6 / Double(max($0.requests, 1)) })
    if client.isCourier {
        notes["µs loop CPU/req"] = median(runs.map { $0.loopCPUSeconds * 1e6 / Double(max($0.requests, 1)) })
    }
    notes["MB RSS"] = median(runs.map { Double($0.peakRSSKilobytes) / 1024 })
    let failures = runs.reduce(0) { $0 + $1.failures }
    if failures > 0 { notes["failures"] = Double(failures) }
    return report.add(scenario, client.rawValue, unit: "req/s", samples: rate(runs), reference: reference, notes: notes)
}

private func rate(_ runs: [ClientRun]) -> [Double] { runs.map { Double($0.requests) / max($0.seconds, 1e-9) } }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// Runs one client in a child process (this executable with `--child`) and reads its figures.
func spawnClient(
    _ client: Client, url: String, concurrency: Int, requests: Int, coding: ResponseCoding
) throws -> ClientRun {
    try spawnChild(
        ["--child", client.flag, url, "\(concurrency)", "\(requests)", coding.rawValue],
        name: "\(client.rawValue) for \(url)")
}

/// Runs this executable with `arguments` and reads the `ClientRun` on its last output line.
func spawnChild(_ arguments: [String], name: String) throws -> ClientRun {
    let process = Process()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
    process.arguments = arguments
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let line = String(decoding: output, as: UTF8.self).split(separator: "\n").last,
        let run = try? JSONDecoder().decode(ClientRun.self, from: Data(line.utf8))
    else {
        throw BenchError("\(name) failed (exit \(process.terminationStatus))")
    }
    return run
}

/// The measured part of a child: a warm-up, then `requests` operations timed with the CPU they
/// used and the peak RSS; prints one `ClientRun` JSON line.
func measureChild(
    requests: Int, warmup: Int, work: (Int) async throws -> (Int, Int), cleanup: () async throws -> Void
) async throws {
    _ = try await work(warmup)
    let cpuBefore = cpuSeconds()
    let loopCPUBefore = loopThreadCPUSeconds()
    let start = ContinuousClock.now
    let (bytes, failures) = try await work(requests)
    let elapsed = ContinuousClock.now - start
    let cpu = cpuSeconds() - cpuBefore
    let loopCPU = loopThreadCPUSeconds() - loopCPUBefore
    try await cleanup()
    let run = ClientRun(
        requests: requests, failures: failures, seconds: elapsed.seconds, cpuSeconds: cpu, loopCPUSeconds: loopCPU,
        peakRSSKilobytes: peakRSSKilobytes(), bytes: bytes)
    FileHandle.standardOutput.write(try JSONEncoder().encode(run) + Data("\n".utf8))
}

extension CommandLine {
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
    }
}
