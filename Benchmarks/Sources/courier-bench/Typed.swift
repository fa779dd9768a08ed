#if Peers
import AsyncHTTPClient
import Courier
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The comparison users make: a GET of the medium payload decoded into models (`[Record]`,
/// snake_case keys, ISO 8601 dates), by `load()` with the default configuration and decoder,
/// against async-http-client and URLSession each followed by Foundation's `JSONDecoder`.
enum TypedClient: String, CaseIterable, Sendable {
    case courier = "Courier load() -> [Record], defaults"
    case asyncHTTPClient = "async-http-client + JSONDecoder"
    case urlSession = "URLSession + JSONDecoder"

    var flag: String {
        switch self {
        case .courier: "courier"
        case .asyncHTTPClient: "ahc"
        case .urlSession: "urlsession"
        }
    }

    init?(flag: String) {
        guard let client = Self.allCases.first(where: { $0.flag == flag }) else { return nil }
        self = client
    }
}

/// `GET <base><path>?i=<index>`: distinct URLs, so nothing coalesces; decoded with Courier's
/// default decoder and the payload's strategies.
struct TypedRecordsResource: Resource {
    typealias Response = [Payloads.Record]
    let base: String
    let path: String
    let index: Int

    var endpoint: Endpoint { Endpoint(base, path: path, query: [URLQueryItem(name: "i", value: String(index))]) }
    var jsonDecoder: any JSONBodyDecoder { CourierJSONDecoder.records }
}

func typedEndToEnd(nginx: Nginx, report: Report, quick: Bool, runs: Int) throws {
    report.section(
        "Typed end to end: medium JSON decoded into [Record], requests/s (median of \(runs)), CPU per request")
    let url = "\(nginx.base)/identity/medium.json"
    for concurrency in [1, 64] {
        let requests = (concurrency == 1 ? 1_000 : 3_000) / (quick ? 10 : 1)
        let scenario = "typed medium identity c=\(concurrency)"
        report.scenario(scenario, detail: "\(requests) requests per run")
        var results: [TypedClient: [ClientRun]] = [:]
        for client in TypedClient.allCases {
            for run in 0..<runs {
                progress("\(scenario): \(client.rawValue), run \(run + 1)/\(runs)")
                results[client, default: []].append(
                    try spawnChild(
                        ["--typed-child", client.flag, url, "\(concurrency)", "\(requests)"], name: client.rawValue))
            }
        }
        let rates = results.mapValues { runs in runs.map { Double($0.requests) / max($0.seconds, 1e-9) } }
        let ahc = report.add(
            scenario, TypedClient.asyncHTTPClient.rawValue, unit: "req/s", samples: rates[.asyncHTTPClient] ?? [],
            notes: cpuNotes(results[.asyncHTTPClient] ?? []))
        for client in [TypedClient.courier, .urlSession] {
            _ = report.add(
                scenario, client.rawValue, unit: "req/s", samples: rates[client] ?? [], reference: ahc,
                notes: cpuNotes(results[client] ?? []))
        }
    }
}

private func cpuNotes(_ runs: [ClientRun]) -> [String: Double] {
    var notes = ["µs CPU/req": median(runs.map { $0.cpuSeconds * 1e6 / Double(max($0.requests, 1)) })]
    notes["MB RSS"] = median(runs.map { Double($0.peakRSSKilobytes) / 1024 })
    let failures = runs.reduce(0) { $0 + $1.failures }
    if failures > 0 { notes["failures"] = Double(failures) }
    return notes
}

/// The child's side of a typed run: prints one `ClientRun` line.
func runTypedChild(client: TypedClient, url: String, concurrency: Int, requests: Int) async throws {
    let expected = try JSONDecoder.records.decode([Payloads.Record].self, from: Payloads.medium)
    /// A decoded response counts only when it is the payload, record for record.
    @Sendable func check(_ records: [Payloads.Record]) throws -> Int {
        guard records == expected else { throw BenchError("decoded \(records.count) records, not the payload's") }
        return records.count
    }
    let work: (Int) async throws -> (Int, Int)
    var cleanup: () async throws -> Void = {}
    switch client {
    case .courier:
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport)
        let parts = BytesResource(url: url)
        work = { count in
            try await concurrently(count, concurrency) { index in
                try check(
                    try await TypedRecordsResource(base: parts.base, path: parts.path, index: index).load(
                        using: coordinator))
            }
        }
        cleanup = { await transport.shutdown() }
    case .asyncHTTPClient:
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(concurrency, 8))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        work = { count in
            try await concurrently(count, concurrency) { index in
                let response = try await client.execute(
                    HTTPClientRequest(url: "\(url)?i=\(index)"), timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 64 << 20)
                return try check(
                    try JSONDecoder.records.decode([Payloads.Record].self, from: Data(body.readableBytesView)))
            }
        }
        cleanup = { try await client.shutdown() }
    case .urlSession:
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = max(concurrency, 6)
        let session = URLSession(configuration: configuration)
        work = { count in
            try await concurrently(count, concurrency) { index in
                let (data, _) = try await session.data(from: URL(string: "\(url)?i=\(index)")!)
                return try check(try JSONDecoder.records.decode([Payloads.Record].self, from: data))
            }
        }
        cleanup = { session.invalidateAndCancel() }
    }
    try await measureChild(
        requests: requests, warmup: min(max(concurrency * 2, 20), requests), work: work, cleanup: cleanup)
}

extension CourierJSONDecoder {
    /// Courier's decoder set up for the payload: snake_case keys, ISO 8601 dates.
    static var records: CourierJSONDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

extension JSONDecoder {
    /// Foundation's decoder set up for the payload, as a user of the peers would write it.
    static var records: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
#endif
