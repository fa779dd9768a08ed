import Foundation

/// Instructions per request under `valgrind --tool=callgrind`, which counts the same on a busy
/// machine: raw C, `CurlTransport.send` (of one URL, and of the distinct URLs a default `load()`
/// asks) and `load()` with the default configuration, small identity, at 1 and at 64 at once.
///
/// Each client runs twice in a child under callgrind, with `short` and `long` requests after the
/// same warm-up; the difference of the two totals over the difference of the requests is the
/// cost of one request, without start-up, warm-up and shutdown. Every thread counts (curl's
/// loop, the tasks, the runtime), and nginx, another process, does not.
///
/// Why the preload: valgrind 3.19 dies with SIGSEGV (`VALGRIND INTERNAL ERROR ... si_code=2`)
/// on any Swift program with an async `main`: the main thread parks in libdispatch's
/// `_dispatch_sigsuspend`, which passes `sigsuspend` a `static const sigset_t` (read-only
/// memory), and valgrind's `sigsuspend` wrapper writes into the caller's mask to take its own
/// signals out. `scripts/instructions.sh` builds a tiny `sigsuspend` that copies the mask to
/// the stack first and passes it in `COURIER_VALGRIND_PRELOAD`. Its DWARF reader also gives up
/// on the DWARF 5 of Swift's toolchain, so the script runs a copy without debug info.
///
/// `gatedOnly` counts only the clients the instruction gate checks (`CurlTransport` and a
/// default `load()`), as CI does: half the valgrind runs, without the rows they are compared to.
func instructions(nginx: Nginx, report: Report, quick: Bool, gatedOnly: Bool = false) throws {
    guard let preload = ProcessInfo.processInfo.environment["COURIER_VALGRIND_PRELOAD"] else {
        throw BenchError("instructions: run it through scripts/instructions.sh (it builds the valgrind preload)")
    }
    let valgrind = try capture("/usr/bin/env", ["sh", "-c", "command -v valgrind"]).trimmingCharacters(
        in: .whitespacesAndNewlines)
    guard !valgrind.isEmpty else { throw BenchError("instructions: valgrind is not installed") }
    let (short, long) = quick ? (200, 700) : (300, 1_300)
    report.section("Instructions per request (valgrind --tool=callgrind, (I(\(long)) - I(\(short))) / \(long - short))")
    let url = "\(nginx.base)/identity/small.json"
    for concurrency in [1, 64] {
        let scenario = "instructions small identity c=\(concurrency)"
        report.scenario(scenario, detail: "instructions per request, all threads of the client process")
        var raw: Figure?
        var distinct: Figure?
        let clients: [Client] =
            gatedOnly ? [.transport, .courierDefaults] : [.raw, .transport, .transportDistinct, .courierDefaults]
        for client in clients {
            progress("\(scenario): \(client.rawValue)")
            var totals: [Int] = []
            for requests in [short, long] {
                totals.append(
                    try countInstructions(
                        valgrind: valgrind, preload: preload, client: client, url: url, concurrency: concurrency,
                        requests: requests))
            }
            let perRequest = Double(totals[1] - totals[0]) / Double(long - short)
            // A default load() is compared with `send` of the same requests, the rest with raw C.
            let figure = report.add(
                scenario, client.rawValue, unit: "instr/req", samples: [perRequest],
                reference: client == .courierDefaults ? distinct : raw, ratioLabel: "the instructions of")
            if client == .raw { raw = figure }
            if client == .transportDistinct { distinct = figure }
        }
    }
}

/// Runs one child under callgrind and returns the instructions it executed in all.
func countInstructions(
    valgrind: String, preload: String, client: Client, url: String, concurrency: Int, requests: Int
) throws -> Int {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("courier-callgrind-\(UUID().uuidString)")
        .path
    let undo = Cleanup.removes(output)
    defer {
        Cleanup.done(undo)
        // COURIER_CALLGRIND_KEEP=<dir> keeps each profile for callgrind_annotate.
        if let keep = ProcessInfo.processInfo.environment["COURIER_CALLGRIND_KEEP"] {
            let kept = "\(keep)/\(client.flag)-c\(concurrency)-\(requests).out"
            do {
                try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
                try? FileManager.default.removeItem(atPath: kept)
                try FileManager.default.moveItem(atPath: output, toPath: kept)
            } catch {
                progress("COURIER_CALLGRIND_KEEP: could not keep \(kept): \(error)")
            }
        }
        try? FileManager.default.removeItem(atPath: output)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: valgrind)
    process.arguments = [
        "--tool=callgrind", "--callgrind-out-file=\(output)", "--log-file=/dev/null",
        CommandLine.executablePath, "--child", client.flag, url, "\(concurrency)", "\(requests)", "identity",
    ]
    var environment = ProcessInfo.processInfo.environment
    environment["LD_PRELOAD"] = preload
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let child = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let line = String(decoding: child, as: UTF8.self).split(separator: "\n").last,
        let run = try? JSONDecoder().decode(ClientRun.self, from: Data(line.utf8)), run.failures == 0
    else {
        throw BenchError("\(client.rawValue) under callgrind failed (exit \(process.terminationStatus))")
    }
    // callgrind writes one file per process; its "summary:" (or "totals:") line is the whole run.
    let profile = try String(contentsOfFile: output, encoding: .utf8)
    for line in profile.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
        if let count = line.split(separator: " ").last.flatMap({ Int($0) }) { return count }
    }
    throw BenchError("no instruction total in \(output)")
}
