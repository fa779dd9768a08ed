import Courier
import CourierTestServer
import CourierTesting
import Foundation

/// A resource over any path of a base URL, decoded to bytes so that only the coordinator is measured.
struct BytesResource: Resource {
    typealias Response = Data
    let base: String
    let path: String
    var query: KeyValuePairs<String, String> = [:]
    var coalescing: Coalescing = .automatic
    var endpoint: Endpoint { Endpoint(base, path: path, query: query) }
}

func microseconds(_ duration: Duration, per count: Int) -> Double {
    (Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12) / Double(count)
}

/// The coordinator's cost per `load()` over a bare transport call: `loads` sequential loads
/// against `MockTransport`, with and without coalescing bookkeeping.
func measureCoordinatorOverhead(loads: Int) async throws {
    let mock = MockTransport()
    mock.respond(to: .get, "/item", with: .json(#"{"id":7,"name":"Ada"}"#))
    let request = HTTPRequest(method: .get, scheme: "http", authority: "mock.test", path: "/item")
    let coordinator = RequestCoordinator(transport: mock)
    let resource = BytesResource(base: "http://mock.test", path: "/item")
    var unshared = resource
    unshared.coalescing = .never
    for _ in 0..<1_000 { _ = try await resource.load(using: coordinator) }  // warm up

    var start = ContinuousClock.now
    for _ in 0..<loads { _ = try await mock.send(request) }
    let bare = microseconds(ContinuousClock.now - start, per: loads)
    start = ContinuousClock.now
    for _ in 0..<loads { _ = try await resource.load(using: coordinator) }
    let coordinated = microseconds(ContinuousClock.now - start, per: loads)
    start = ContinuousClock.now
    for _ in 0..<loads { _ = try await unshared.load(using: coordinator) }
    let uncoalesced = microseconds(ContinuousClock.now - start, per: loads)
    print(
        String(
            format: "coordinator overhead (%d loads, MockTransport): bare send %.1f µs, load() %.1f µs "
                + "(+%.1f µs), load() without coalescing %.1f µs (+%.1f µs)",
            loads, bare, coordinated, coordinated - bare, uncoalesced, uncoalesced - bare))
    await coordinator.shutdown()
}

/// 1,000 concurrent identical loads of a response that takes ~100 ms: transfers made and the
/// time against one load of the same resource.
func measureCoalescing(server: TestServer, transport: CurlTransport) async throws {
    let coordinator = RequestCoordinator(transport: transport)
    let resource = BytesResource(base: server.baseURL, path: "/slow-body", query: ["chunks": "2", "delayMs": "50"])
    var start = ContinuousClock.now
    _ = try await resource.load(using: coordinator)
    let single = ContinuousClock.now - start
    let before = server.snapshot.requestCount
    start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<1_000 { group.addTask { try await resource.load(using: coordinator).count } }
        for try await count in group where count != 200 { print("unexpected body size \(count)") }
    }
    let thousand = ContinuousClock.now - start
    let transfers = server.snapshot.requestCount - before
    print(
        String(
            format:
                "coalescing: 1,000 concurrent identical loads -> %d transfer(s), %.1f ms vs %.1f ms for one load (%.2fx)",
            transfers, microseconds(thousand, per: 1_000), microseconds(single, per: 1_000),
            microseconds(thousand, per: 1) / microseconds(single, per: 1)))
    await coordinator.shutdown()
}
