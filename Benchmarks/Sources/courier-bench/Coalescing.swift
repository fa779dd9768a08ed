import Courier
import Foundation
import Synchronization

/// Counts the transfers that reach the real transport.
final class CountingTransport: HTTPTransport {
    let inner: CurlTransport
    let count = Atomic<Int>(0)
    init(_ inner: CurlTransport) { self.inner = inner }
    func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws -> TransportResponse {
        count.add(1, ordering: .relaxed)
        return try await inner.send(request, body: body, options: options)
    }
}

/// 1,000 concurrent identical loads of a response nginx stretches to about a second
/// (`limit_rate`):
/// transfers made (must be 1) and total time against one load.
func coalescing(nginx: Nginx, report: Report, runs: Int) async throws {
    report.section("Coalescing: 1,000 concurrent identical load()s of a response that takes about 1 s")
    let curl = CurlTransport()
    let transport = CountingTransport(curl)
    let coordinator = RequestCoordinator(transport: transport)
    let resource = BytesResource(url: "\(nginx.base)/slow/medium.json")
    var singles: [Double] = []
    var groups: [Double] = []
    var transfers: [Double] = []
    for run in 0..<runs {
        progress("coalescing, run \(run + 1)/\(runs)")
        var start = ContinuousClock.now
        _ = try await resource.load(using: coordinator)
        singles.append((ContinuousClock.now - start).seconds * 1_000)
        let before = transport.count.load(ordering: .relaxed)
        start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<1_000 { group.addTask { try await resource.load(using: coordinator).count } }
            for try await size in group where size != Payloads.medium.count { throw BenchError("short body \(size)") }
        }
        groups.append((ContinuousClock.now - start).seconds * 1_000)
        transfers.append(Double(transport.count.load(ordering: .relaxed) - before))
    }
    let single = report.add("coalescing", "one load()", unit: "ms", samples: singles)
    report.add(
        "coalescing", "1,000 identical load()s", unit: "ms", samples: groups, reference: single,
        notes: ["transfers": median(transfers)], ratioLabel: "the time of")
    await curl.shutdown()
}
