// courier-bench: Courier against real peers, measured in the same run on this machine.
//
//     courier-bench [--quick] [--filter e2e,parse,cache,coalescing] [--output bench-results.json]
//
// End to end against nginx (started here, on 127.0.0.1, with a generated configuration; when it
// cannot be had, only parse and cache run), each client in a child process of its own.
import Courier
import Foundation
import Glibc
import Synchronization

let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print("usage: courier-bench [--quick] [--filter e2e,parse,cache,coalescing] [--output bench-results.json]")
    exit(0)
}
if let index = arguments.firstIndex(of: "--child") {
    // Child mode: --child CLIENT URL CONCURRENCY REQUESTS gzip|identity
    let rest = Array(arguments[(index + 1)...])
    guard rest.count == 5, let client = Client(flag: rest[0]), let concurrency = Int(rest[2]), let requests = Int(rest[3])
    else {
        FileHandle.standardError.write(Data("bad --child arguments: \(rest)\n".utf8))
        exit(2)
    }
    try await runChild(client: client, url: rest[1], concurrency: concurrency, requests: requests, gzip: rest[4] == "gzip")
    exit(0)
}

func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let quick = arguments.contains("--quick")
let filter = value(after: "--filter").map { Set($0.split(separator: ",").map(String.init)) }
let output = value(after: "--output") ?? "bench-results.json"
let runs = quick ? 1 : 3
func selected(_ name: String) -> Bool { filter?.contains(name) ?? true }

print("courier-bench\(quick ? " --quick" : ""): \(CurlFeatures.current), \(ProcessInfo.processInfo.activeProcessorCount) cores")
let report = Report()
let nginx = selected("e2e") || selected("coalescing") ? try Nginx.start() : nil
stopsServerOnSignals(nginx)
if let nginx { print("nginx: \(nginx.version) on \(nginx.base)") }
do {
    if let nginx, selected("e2e") { try endToEnd(nginx: nginx, report: report, quick: quick, runs: runs) }
    if selected("parse") { try parse(report: report, quick: quick, runs: runs) }
    if selected("cache") { try await caches(report: report, quick: quick, runs: runs) }
    if let nginx, selected("coalescing") { try await coalescing(nginx: nginx, report: report, runs: runs) }
} catch {
    nginx?.stop()
    progress(nil)
    print("courier-bench failed: \(error)")
    exit(1)
}
nginx?.stop()
progress(nil)
try report.write(to: output, machine: machineDescription(nginx: nginx?.version))
print("\nWrote \(report.figures.count) figures to \(output)")
