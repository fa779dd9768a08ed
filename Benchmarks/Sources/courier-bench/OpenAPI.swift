#if Peers
import AsyncHTTPClient
import BenchOpenAPIClient
import Courier
import CourierOpenAPI
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The same generated operation (`listRecords`: the medium payload decoded into the generated
/// `[Components.Schemas.Record]`) through the two transports a server team chooses between:
/// `CourierClientTransport` over a default `RequestCoordinator`, and
/// swift-openapi-async-http-client 1.5.0 over an `HTTPClient`.
enum OpenAPIClient: String, CaseIterable, Sendable {
    case courier = "generated client + CourierClientTransport"
    case asyncHTTPClient = "generated client + AsyncHTTPClientTransport"

    var flag: String {
        switch self {
        case .courier: "courier"
        case .asyncHTTPClient: "ahc"
        }
    }

    init?(flag: String) {
        guard let client = Self.allCases.first(where: { $0.flag == flag }) else { return nil }
        self = client
    }

    /// The row's name: the generated client over the transport, or the transport alone.
    func subject(_ work: OpenAPIWork) -> String {
        guard work == .transport else { return rawValue }
        return self == .courier ? "CourierClientTransport.send" : "AsyncHTTPClientTransport.send"
    }
}

/// What an OpenAPI child runs: the generated `listRecords` (the medium payload decoded into
/// `[Record]`), or the transport alone (`ClientTransport.send` of the small payload, its body
/// collected), which shows the transport's own cost per request without the decoding.
enum OpenAPIWork: String, CaseIterable, Sendable {
    case operation = "listRecords"
    case transport = "transport"
}

/// Requests/s and CPU per request through both transports, at c=1 and c=64, each run in a child
/// process of its own; Courier's row carries the ratio to the other.
func openAPIEndToEnd(nginx: Nginx, report: Report, quick: Bool, runs: Int) throws {
    report.section(
        "OpenAPI: the generated operation (medium JSON -> [Record]) and the bare ClientTransport.send (small JSON) through both transports, requests/s (median of \(runs)), CPU per request"
    )
    for (work, concurrency) in [(OpenAPIWork.operation, 1), (.operation, 64), (.transport, 1), (.transport, 64)] {
        // ~14 ms of decoding per listRecords: the full row stays near 4 minutes.
        let full = work == .operation ? (concurrency == 1 ? 300 : 960) : (concurrency == 1 ? 3_000 : 10_000)
        let requests = full / (quick ? 5 : 1)
        let scenario =
            work == .operation
            ? "openapi listRecords c=\(concurrency)" : "openapi ClientTransport.send small c=\(concurrency)"
        report.scenario(scenario, detail: "\(requests) requests per run")
        var results: [OpenAPIClient: [ClientRun]] = [:]
        for client in OpenAPIClient.allCases {
            for run in 0..<runs {
                progress("\(scenario): \(client.rawValue), run \(run + 1)/\(runs)")
                results[client, default: []].append(
                    try spawnChild(
                        ["--openapi-child", client.flag, nginx.base, "\(concurrency)", "\(requests)", work.rawValue],
                        name: client.rawValue))
            }
        }
        let ahcRuns = results[.asyncHTTPClient] ?? []
        let courierRuns = results[.courier] ?? []
        let ahc = report.add(
            scenario, OpenAPIClient.asyncHTTPClient.subject(work), unit: "req/s", samples: rates(ahcRuns),
            notes: openAPINotes(ahcRuns))
        var notes = openAPINotes(courierRuns)
        let ahcCPU = cpuPerRequest(ahcRuns)
        if ahcCPU > 0 { notes["x CPU/req vs AHC"] = cpuPerRequest(courierRuns) / ahcCPU }
        let ahcRate = median(rates(ahcRuns))
        if ahcRate > 0 { notes["x req/s vs AHC"] = median(rates(courierRuns)) / ahcRate }
        _ = report.add(
            scenario, OpenAPIClient.courier.subject(work), unit: "req/s", samples: rates(courierRuns), reference: ahc,
            notes: notes)
    }
}

private func rates(_ runs: [ClientRun]) -> [Double] { runs.map { Double($0.requests) / max($0.seconds, 1e-9) } }

private func cpuPerRequest(_ runs: [ClientRun]) -> Double {
    median(runs.map { $0.cpuSeconds * 1e6 / Double(max($0.requests, 1)) })
}

private func openAPINotes(_ runs: [ClientRun]) -> [String: Double] {
    var notes = ["µs CPU/req": cpuPerRequest(runs), "MB RSS": median(runs.map { Double($0.peakRSSKilobytes) / 1024 })]
    let failures = runs.reduce(0) { $0 + $1.failures }
    if failures > 0 { notes["failures"] = Double(failures) }
    return notes
}

/// The child's side of an OpenAPI run, with a distinct `i` per request (nothing coalesces):
/// `listRecords`, each answer checked record for record against the payload, or the bare
/// `send` of the small payload, each body's length checked; prints one `ClientRun` line.
func runOpenAPIChild(
    client: OpenAPIClient, base: String, concurrency: Int, requests: Int, work kind: OpenAPIWork
) async throws {
    let expected = try JSONDecoder.records.decode([Payloads.Record].self, from: Payloads.medium)
    let serverURL = URL(string: base)!
    let transport: any ClientTransport
    var cleanup: () async throws -> Void = {}
    switch client {
    case .courier:
        let curl = CurlTransport()
        transport = CourierClientTransport(coordinator: RequestCoordinator(transport: curl))
        cleanup = { await curl.shutdown() }
    case .asyncHTTPClient:
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(concurrency, 8))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        transport = AsyncHTTPClientTransport(configuration: .init(client: http, timeout: .seconds(30)))
        cleanup = { try await http.shutdown() }
    }
    if kind == .transport {
        let work: (Int) async throws -> (Int, Int) = { count in
            try await concurrently(count, concurrency) { index in
                let request = HTTPRequest(
                    method: .get, scheme: nil, authority: nil, path: "/identity/small.json?i=\(index)")
                let (response, body) = try await transport.send(
                    request, body: nil, baseURL: serverURL, operationID: "getSmall")
                guard response.status == .ok, let body else { throw BenchError("HTTP \(response.status.code)") }
                let bytes = try await Data(collecting: body, upTo: 1 << 20)
                guard bytes.count == Payloads.small.count else {
                    throw BenchError("\(bytes.count) bytes, not the payload's")
                }
                return bytes.count
            }
        }
        try await measureChild(
            requests: requests, warmup: min(max(concurrency * 2, 20), requests), work: work, cleanup: cleanup)
        return
    }
    let generated = BenchOpenAPIClient.Client(serverURL: serverURL, transport: transport)
    let work: (Int) async throws -> (Int, Int) = { count in
        try await concurrently(count, concurrency) { index in
            let records = try await generated.listRecords(query: .init(i: index)).ok.body.json
            guard records.count == expected.count,
                zip(records, expected).allSatisfy({
                    $0.id == $1.id && $0.user_name == $1.userName
                        && $0.created_at == $1.createdAt && $0.address.zip_code == $1.address.zipCode
                })
            else { throw BenchError("decoded \(records.count) records, not the payload's") }
            return records.count
        }
    }
    try await measureChild(
        requests: requests, warmup: min(max(concurrency * 2, 20), requests), work: work, cleanup: cleanup)
}
#endif
