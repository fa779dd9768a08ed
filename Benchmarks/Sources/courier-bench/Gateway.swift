#if Peers
import AsyncHTTPClient
import Courier
import Foundation
import Glibc
import Hummingbird

/// The comparison server-side users make: a Hummingbird 2 service whose route loads a JSON
/// resource from an upstream (nginx: the small payload, a page of three records, at a distinct
/// URL per request so that nothing coalesces) and answers a small JSON built from it. The same
/// service on Courier's `load()` with the defaults, and on async-http-client + `JSONDecoder`.
/// wrk drives each service in a process of its own at 1 and 64 connections; the figures are the
/// service process's CPU per request, the requests per second and wrk's p99.
enum GatewayVariant: String, CaseIterable, Sendable {
    case courier = "Hummingbird + Courier load()"
    case asyncHTTPClient = "Hummingbird + async-http-client + JSONDecoder"

    var flag: String { self == .courier ? "courier" : "ahc" }

    init?(flag: String) {
        guard let variant = Self.allCases.first(where: { $0.flag == flag }) else { return nil }
        self = variant
    }
}

/// What the upstream answers: a page of records.
struct UpstreamPage: Codable, Sendable {
    var page: Int
    var total: Int
    var items: [Payloads.Record]
}

/// What the service answers: a few fields built from the page.
struct GatewaySummary: ResponseEncodable, Sendable {
    var id: Int
    var names: [String]
    var activeCount: Int
    var balanceCents: Int

    init(id: Int, page: UpstreamPage) {
        self.id = id
        names = page.items.map(\.userName)
        activeCount = page.items.count(where: \.isActive)
        balanceCents = page.items.reduce(0) { $0 + $1.balanceCents }
    }
}

/// `GET <base><path>?i=<id>`, decoded with Courier's default decoder and the payload's strategies.
struct UpstreamPageResource: Resource {
    typealias Response = UpstreamPage
    let base: String
    let path: String
    let id: Int

    var endpoint: Endpoint { Endpoint(base, path: path, query: [URLQueryItem(name: "i", value: String(id))]) }
    var jsonDecoder: any JSONBodyDecoder { CourierJSONDecoder.records }
}

/// The service's side (`--gateway-child VARIANT PORT UPSTREAM_URL`): serves `GET /summary/{id}`
/// on 127.0.0.1:PORT until it is stopped.
func runGatewayService(variant: GatewayVariant, port: Int, upstream: String) async throws {
    let router = Router(context: BasicRequestContext.self)
    router.get("health") { _, _ in "ok" }
    // What ends with the service, after Hummingbird's graceful shutdown (SIGTERM).
    let shutdown: () async throws -> Void
    switch variant {
    case .courier:
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport)
        shutdown = { await transport.shutdown() }
        let parts = BytesResource(url: upstream)
        router.get("summary/:id") { _, context -> GatewaySummary in
            let id = try context.parameters.require("id", as: Int.self)
            let page = try await UpstreamPageResource(base: parts.base, path: parts.path, id: id).load(
                using: coordinator)
            return GatewaySummary(id: id, page: page)
        }
    case .asyncHTTPClient:
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        shutdown = { try await client.shutdown() }
        let decoder = JSONDecoder.records
        router.get("summary/:id") { _, context -> GatewaySummary in
            let id = try context.parameters.require("id", as: Int.self)
            let response = try await client.execute(
                HTTPClientRequest(url: "\(upstream)?i=\(id)"), timeout: .seconds(30))
            guard response.status == .ok else { throw HTTPError(.badGateway) }
            let body = try await response.body.collect(upTo: 16 << 20)
            return GatewaySummary(
                id: id, page: try decoder.decode(UpstreamPage.self, from: Data(body.readableBytesView)))
        }
    }
    // Hummingbird logs its start to standard output, which the benchmark discards.
    let application = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
    try await application.runService()
    try await shutdown()
}

/// What wrk measured in one run, and the service's CPU over it.
struct GatewayRun: Sendable {
    var requests: Int
    var seconds: Double
    var errors: Int
    var p99Milliseconds: Double
    var cpuSeconds: Double

    var requestsPerSecond: Double { Double(requests) / max(seconds, 1e-9) }
    var cpuMicrosecondsPerRequest: Double { cpuSeconds * 1e6 / Double(max(requests, 1)) }
}

func gateway(nginx: Nginx, report: Report, quick: Bool, runs: Int) throws {
    guard let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"].first(where: FileManager.default.isExecutableFile) else {
        throw BenchError("wrk is missing (scripts/bench.sh installs it: apt-get install wrk)")
    }
    let seconds = quick ? 3 : 10
    report.section(
        "Gateway: a Hummingbird 2 service calling nginx per request, driven by wrk for \(seconds) s (median of \(runs))"
    )
    // wrk's script: a distinct id per request, so each service call is a distinct upstream URL.
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("courier-gateway-\(getpid()).lua").path
    let removeScript = Cleanup.removes(script)
    defer {
        unlink(script)
        Cleanup.done(removeScript)
    }
    try Data(
        """
        local counter = 0
        request = function()
            counter = counter + 1
            return wrk.format("GET", "/summary/" .. counter)
        end
        """.utf8
    ).write(to: URL(fileURLWithPath: script))
    let upstream = "\(nginx.base)/identity/small.json"
    for connections in [1, 64] {
        let scenario = "gateway small c=\(connections)"
        report.scenario(scenario, detail: "wrk, \(connections) connection\(connections == 1 ? "" : "s"), \(seconds) s")
        var results: [GatewayVariant: [GatewayRun]] = [:]
        for run in 0..<runs {
            // Alternated, so that a slow phase of the machine does not fall on one variant.
            let order = run.isMultiple(of: 2) ? GatewayVariant.allCases : GatewayVariant.allCases.reversed()
            for variant in order {
                progress("\(scenario): \(variant.rawValue), run \(run + 1)/\(runs)")
                results[variant, default: []].append(
                    try measureGateway(
                        variant, upstream: upstream, wrk: wrk, script: script, connections: connections,
                        seconds: seconds))
            }
        }
        let ahc = results[.asyncHTTPClient] ?? []
        let courier = results[.courier] ?? []
        let ahcRate = report.add(
            scenario, GatewayVariant.asyncHTTPClient.rawValue, unit: "req/s", samples: ahc.map(\.requestsPerSecond),
            notes: gatewayNotes(ahc))
        report.add(
            scenario, GatewayVariant.courier.rawValue, unit: "req/s", samples: courier.map(\.requestsPerSecond),
            reference: ahcRate, notes: gatewayNotes(courier))
        let ahcCPU = report.add(
            scenario, "async-http-client: service CPU", unit: "µs/req", samples: ahc.map(\.cpuMicrosecondsPerRequest))
        report.add(
            scenario, "Courier: service CPU", unit: "µs/req", samples: courier.map(\.cpuMicrosecondsPerRequest),
            reference: ahcCPU, ratioLabel: "the CPU of")
        let ahcP99 = report.add(
            scenario, "async-http-client: p99", unit: "ms", samples: ahc.map(\.p99Milliseconds))
        report.add(
            scenario, "Courier: p99", unit: "ms", samples: courier.map(\.p99Milliseconds), reference: ahcP99,
            ratioLabel: "the p99 of")
    }
}

private func gatewayNotes(_ runs: [GatewayRun]) -> [String: Double] {
    var notes = ["µs CPU/req": median(runs.map(\.cpuMicrosecondsPerRequest))]
    notes["p99 ms"] = median(runs.map(\.p99Milliseconds))
    let errors = runs.reduce(0) { $0 + $1.errors }
    if errors > 0 { notes["errors"] = Double(errors) }
    return notes
}

/// Starts the service, warms it up for a second, then runs wrk against it for `seconds`,
/// reading the service's CPU time before and after; stops the service.
private func measureGateway(
    _ variant: GatewayVariant, upstream: String, wrk: String, script: String, connections: Int, seconds: Int
) throws -> GatewayRun {
    let port = try freePort()
    let service = Process()
    service.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
    service.arguments = ["--gateway-child", variant.flag, "\(port)", upstream]
    service.standardOutput = FileHandle.nullDevice
    try service.run()
    let pid = service.processIdentifier
    let running = Cleanup.register { stopProcess(pid) }
    defer {
        stopProcess(pid)
        service.waitUntilExit()
        Cleanup.done(running)
    }
    let deadline = ContinuousClock.now + .seconds(30)
    while !canConnect(port: port) {
        guard service.isRunning, ContinuousClock.now < deadline else {
            throw BenchError("\(variant.rawValue): the service did not listen on port \(port)")
        }
        usleep(20_000)
    }
    let url = "http://127.0.0.1:\(port)"
    let common = ["-t1", "-c\(connections)", "--timeout", "10s", "-s", script]
    _ = try capture(wrk, common + ["-d1s", url])
    let cpuBefore = try processCPUSeconds(pid)
    let output = try capture(wrk, common + ["-d\(seconds)s", "--latency", url])
    let cpuAfter = try processCPUSeconds(pid)
    var run = try parseWrk(output, variant: variant)
    run.cpuSeconds = cpuAfter - cpuBefore
    guard run.requests > 0, Double(run.errors) <= Double(run.requests) * 0.001 else {
        throw BenchError("\(variant.rawValue): \(run.errors) of \(run.requests) requests failed:\n\(output)")
    }
    return run
}

/// User and system CPU time of process `pid` so far (`/proc/PID/stat`, fields 14 and 15).
private func processCPUSeconds(_ pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    guard let close = stat.lastIndex(of: ")") else { throw BenchError("unreadable /proc/\(pid)/stat") }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // fields[0] is the state (field 3), so utime (14) and stime (15) are at 11 and 12.
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
        throw BenchError("unreadable /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Reads wrk's summary: "N requests in S", the "99%" latency line, "Socket errors" and
/// "Non-2xx or 3xx responses".
func parseWrk(_ output: String, variant: GatewayVariant) throws -> GatewayRun {
    var requests: Int?
    var seconds: Double?
    var p99: Double?
    var errors = 0
    for line in output.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        if words.count >= 4, words[1] == "requests", words[2] == "in" {
            requests = Int(words[0])
            seconds = wrkDuration(String(words[3].dropLast(words[3].hasSuffix(",") ? 1 : 0)))
        } else if words.count == 2, words[0] == "99%" {
            p99 = wrkDuration(String(words[1])).map { $0 * 1_000 }
        } else if line.hasPrefix("Non-2xx or 3xx responses:"), let count = words.last.flatMap({ Int($0) }) {
            errors += count
        } else if line.hasPrefix("Socket errors:") {
            // Socket errors: connect 0, read 0, write 0, timeout 0
            errors += line.split(separator: ",").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
                .reduce(0, +)
        }
    }
    guard let requests, let seconds, let p99 else {
        throw BenchError("\(variant.rawValue): cannot read wrk's output:\n\(output)")
    }
    return GatewayRun(requests: requests, seconds: seconds, errors: errors, p99Milliseconds: p99, cpuSeconds: 0)
}

/// A wrk duration ("812.00us", "1.23ms", "10.00s", "1.02m") in seconds.
func wrkDuration(_ text: String) -> Double? {
    for (suffix, scale) in [("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3_600.0)]
    where text.hasSuffix(suffix) {
        return Double(text.dropLast(suffix.count)).map { $0 * scale }
    }
    return nil
}
#endif
