// courier-bench: Courier against real peers, measured in the same run on this machine.
//
//     courier-bench [--quick] [--filter e2e,codings,typed,openapi,gateway,many,events,parse,decode,cache,coalescing,resilience,fleet] [--output bench-results.json]
//     scripts/instructions.sh (courier-bench --filter instructions under a valgrind preload)
//     courier-bench --interleaved URL ROUNDS BLOCK LABEL...   (c=1 variants alternated in one process)
//     courier-bench --soak [--quick] [--soak-loads N] [--soak-seconds S] [--soak-concurrency C] [--soak-seed N]
//                          [--soak-load-bound S] [--output soak-results.json]
//
// End to end against nginx (started here, on 127.0.0.1, with a generated configuration; when it
// cannot be had, only parse and cache run), each client in a child process of its own.
// --soak runs load()s against a fault server in a child process and fails on leaks or hangs.
import Courier
import Foundation
import Glibc
import Synchronization

let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print(
        """
        usage: courier-bench [--quick] [--filter e2e,codings,typed,openapi,gateway,many,events,parse,decode,cache,coalescing,resilience,fleet] [--output bench-results.json]
               courier-bench --interleaved URL ROUNDS BLOCK LABEL...
               courier-bench --soak [--quick] [--soak-loads N] [--soak-seconds S] [--soak-concurrency C]
                             [--soak-seed N] [--soak-load-bound S] [--output soak-results.json]

          --quick       fewer requests and one run per figure; with --soak, 10,000 loads and at most 45 s
          --filter      the scenarios to run (all by default); `instructions` (instructions per request
                        under callgrind) runs only when named, through scripts/instructions.sh
                        (with --gated-only, only the clients its gate checks, as CI runs it);
                        `codings` runs only e2e's medium payload in gzip, brotli and zstd
          --output      where the JSON figures go (bench-results.json, or soak-results.json with --soak)
          --interleaved variants of one small GET at c=1 (tuned, defaults, defaults-same, tuned-distinct,
                        no-coalescing, no-retries, no-host-queue, no-cache, send, send-distinct; LABEL@loop
                        on the loop executor) in one process over one transport, ROUNDS rounds of BLOCK
                        requests of each in turn: ratios to the first label under the same machine noise
          --soak        instead of the scenarios: N load()s (100,000 by default) at C at once (64) through
                        a default RequestCoordinator against a loopback server that mixes stalls, resets,
                        truncated bodies, 503s with Retry-After and bad gzip with good answers, chosen
                        from the seed (1) per request. Exits 1 if a load does not end in time, succeeds
                        with a wrong body or throws other than ServiceError, if file descriptors,
                        threads or RSS grow from 10% of the loads to the end (by more than 8, 4, 25%),
                        or if more than 2 descriptors stay open once the transport has shut down.
          --soak-loads N        loads in all (100,000; 10,000 with --quick)
          --soak-concurrency C  loads at once (64)
          --soak-seconds S      no new load starts past S seconds (900; 45 with --quick)
          --soak-seed N         the seed that picks each answer (1)
          --soak-load-bound S   seconds a load may take before it counts as one that never ends (15;
                                below 1, stalled loads exceed it: a way to see the soak fail)
        """)
    exit(0)
}
// A child of the benchmark (a measured client, the soak's fault server) ends with it, however it
// ends; the benchmark itself undoes what it started when interrupted (Cleanup).
let childModes: Set = [
    "--child", "--typed-child", "--openapi-child", "--gateway-child", "--fleet-child", "--purge-child",
    "--fault-server", "--resilience-upstream",
]
if arguments.contains(where: childModes.contains) { diesWithParent() } else { try Cleanup.takesSignals() }
if let index = arguments.firstIndex(of: "--fault-server") {
    // Fault-server mode, for --soak: --fault-server SEED
    guard arguments.indices.contains(index + 1), let seed = UInt64(arguments[index + 1]) else {
        FileHandle.standardError.write(Data("bad --fault-server arguments\n".utf8))
        exit(2)
    }
    try runFaultServer(seed: seed)
}
if arguments.contains("--resilience-upstream") { try runResilienceUpstream() }
if let index = arguments.firstIndex(of: "--interleaved") {
    // Interleaved mode: --interleaved URL ROUNDS BLOCK LABEL...
    let rest = Array(arguments[(index + 1)...])
    guard rest.count >= 4, let rounds = Int(rest[1]), let block = Int(rest[2]) else {
        FileHandle.standardError.write(Data("bad --interleaved arguments: \(rest)\n".utf8))
        exit(2)
    }
    try await runInterleaved(url: rest[0], rounds: rounds, block: block, labels: Array(rest[3...]))
    exit(0)
}
if let index = arguments.firstIndex(of: "--child") {
    // Child mode: --child CLIENT URL CONCURRENCY REQUESTS identity|gzip|br|zstd
    let rest = Array(arguments[(index + 1)...])
    guard rest.count == 5, let client = Client(flag: rest[0]), let concurrency = Int(rest[2]),
        let requests = Int(rest[3])
    else {
        FileHandle.standardError.write(Data("bad --child arguments: \(rest)\n".utf8))
        exit(2)
    }
    guard let coding = ResponseCoding(rawValue: rest[4]) else {
        FileHandle.standardError.write(Data("bad --child coding: \(rest[4])\n".utf8))
        exit(2)
    }
    try await runChild(client: client, url: rest[1], concurrency: concurrency, requests: requests, coding: coding)
    exit(0)
}

#if Peers
if let index = arguments.firstIndex(of: "--typed-child") {
    // Typed child mode: --typed-child CLIENT URL CONCURRENCY REQUESTS
    let rest = Array(arguments[(index + 1)...])
    guard rest.count == 4, let client = TypedClient(flag: rest[0]), let concurrency = Int(rest[2]),
        let requests = Int(rest[3])
    else {
        FileHandle.standardError.write(Data("bad --typed-child arguments: \(rest)\n".utf8))
        exit(2)
    }
    try await runTypedChild(client: client, url: rest[1], concurrency: concurrency, requests: requests)
    exit(0)
}

#if Peers
if let index = arguments.firstIndex(of: "--gateway-child") {
    // Gateway-service mode: --gateway-child VARIANT PORT UPSTREAM_URL (serves until stopped)
    let rest = Array(arguments[(index + 1)...])
    guard rest.count == 3, let variant = GatewayVariant(flag: rest[0]), let port = Int(rest[1]) else {
        FileHandle.standardError.write(Data("bad --gateway-child arguments: \(rest)\n".utf8))
        exit(2)
    }
    try await runGatewayService(variant: variant, port: port, upstream: rest[2])
    exit(0)
}
#endif
if let index = arguments.firstIndex(of: "--purge-child") {
    // Purge-child mode: --purge-child PORT BASE TAG ROUNDS START
    do {
        try await runPurgeChild(arguments: Array(arguments[(index + 1)...]))
    } catch {
        FileHandle.standardError.write(Data("purge child: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if let index = arguments.firstIndex(of: "--fleet-child") {
    // Fleet-member mode: --fleet-child PORT BASE TAG ROUNDS collapse|plain START
    do {
        try await runFleetChild(arguments: Array(arguments[(index + 1)...]))
    } catch {
        FileHandle.standardError.write(Data("fleet member: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

if let index = arguments.firstIndex(of: "--openapi-child") {
    // OpenAPI child mode: --openapi-child CLIENT BASE CONCURRENCY REQUESTS listRecords|transport
    let rest = Array(arguments[(index + 1)...])
    guard rest.count == 5, let client = OpenAPIClient(flag: rest[0]), let concurrency = Int(rest[2]),
        let requests = Int(rest[3]), let work = OpenAPIWork(rawValue: rest[4])
    else {
        FileHandle.standardError.write(Data("bad --openapi-child arguments: \(rest)\n".utf8))
        exit(2)
    }
    try await runOpenAPIChild(client: client, base: rest[1], concurrency: concurrency, requests: requests, work: work)
    exit(0)
}
#endif

func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let quick = arguments.contains("--quick")
if arguments.contains("--soak") {
    print(
        "courier-bench --soak\(quick ? " --quick" : ""): \(CurlFeatures.current), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    )
    let report = Report()
    let failures: [String]
    do {
        failures = try await soak(options: SoakOptions(quick: quick, value: value(after:)), report: report)
    } catch {
        progress(nil)
        print("courier-bench --soak failed: \(error)")
        exit(1)
    }
    let output = value(after: "--output") ?? "soak-results.json"
    try report.write(to: output, machine: machineDescription(nginx: nil))
    print("\nWrote \(report.figures.count) figures to \(output)")
    guard failures.isEmpty else {
        print("SOAK FAILED:\n" + failures.map { "  - \($0)" }.joined(separator: "\n"))
        exit(1)
    }
    print("Soak passed: every load ended, nothing grew beyond its limit.")
    exit(0)
}
let filter = value(after: "--filter").map { Set($0.split(separator: ",").map(String.init)) }
let output = value(after: "--output") ?? "bench-results.json"
let runs = quick ? 1 : 3
func selected(_ name: String) -> Bool { filter?.contains(name) ?? true }

print(
    "courier-bench\(quick ? " --quick" : ""): \(CurlFeatures.current), \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
let report = Report()
let countsInstructions = filter?.contains("instructions") ?? false
let nginx =
    ["e2e", "codings", "typed", "openapi", "gateway", "many", "events", "coalescing", "fleet"].contains(where: selected)
        || countsInstructions
    ? try Nginx.start() : nil
if let nginx { print("nginx: \(nginx.version) on \(nginx.base)") }
let postgres = nginx != nil && selected("fleet") ? try Postgres.start() : nil
if let postgres { print("PostgreSQL: \(postgres.version) on 127.0.0.1:\(postgres.port)") }
do {
    if let nginx, selected("e2e") || selected("codings") {
        try endToEnd(nginx: nginx, report: report, quick: quick, runs: runs, codingsOnly: !selected("e2e"))
    }
    #if Peers
    if let nginx, selected("typed") { try typedEndToEnd(nginx: nginx, report: report, quick: quick, runs: runs) }
    if let nginx, selected("openapi") { try openAPIEndToEnd(nginx: nginx, report: report, quick: quick, runs: runs) }
    if let nginx, selected("gateway") { try gateway(nginx: nginx, report: report, quick: quick, runs: runs) }
    #endif
    if let nginx, selected("many") { try manyLoads(nginx: nginx, report: report, quick: quick, runs: runs) }
    if let nginx, selected("events") { try await eventStreams(nginx: nginx, report: report, quick: quick, runs: runs) }
    if selected("parse") { try parse(report: report, quick: quick, runs: runs) }
    if selected("decode") { try decoding(report: report, quick: quick, runs: runs) }
    if selected("cache") { try await caches(report: report, quick: quick, runs: runs) }
    if let nginx, selected("coalescing") { try await coalescing(nginx: nginx, report: report, runs: runs) }
    if selected("resilience") { try await resilience(report: report, quick: quick, runs: runs) }
    #if Peers
    if let nginx, let postgres {
        try await fleet(nginx: nginx, postgres: postgres, report: report, quick: quick, runs: runs)
    }
    #endif
    if let nginx, countsInstructions {
        try instructions(nginx: nginx, report: report, quick: quick, gatedOnly: arguments.contains("--gated-only"))
    }
} catch {
    Cleanup.yieldsToSignal()
    nginx?.stop()
    postgres?.stop()
    progress(nil)
    print("courier-bench failed: \(error)")
    exit(1)
}
nginx?.stop()
postgres?.stop()
progress(nil)
try report.write(to: output, machine: machineDescription(nginx: nginx?.version))
print("\nWrote \(report.figures.count) figures to \(output)")
