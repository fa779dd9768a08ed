import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// `GET <base><path>?<query>` as a resource to download, stream or upload; retries cost no
/// time (the tests use a `RecordingClock`).
struct TransferResource: Resource {
    typealias Response = Data
    var base: String
    var path: String
    var query: [URLQueryItem] = []
    var method: HTTPRequest.Method = .get
    var body: RequestBody?
    var retryPolicy: RetryPolicy? = RetryPolicy(maximumAttempts: 3, jitter: 0)
    var endpoint: Endpoint { Endpoint(base, path: path, query: query) }

    init(_ server: TestServer, _ path: String, _ query: [String: String] = [:]) {
        base = server.baseURL
        self.path = path
        self.query = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
    }
}

/// A directory of its own for one test's files, removed afterwards.
final class TransferDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "courier-transfers-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// Every file in the directory (a leftover `.part` shows up here).
    var contents: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

/// A coordinator configuration whose retries do not wait.
func transferConfiguration() -> RequestCoordinator.Configuration {
    var configuration = RequestCoordinator.Configuration()
    configuration.clock = RecordingClock()
    return configuration
}

/// The pattern bytes `/bytes` and the transfer routes serve.
func patternBytes(_ count: Int) -> Data {
    var data = Data(count: count)
    data.withUnsafeMutableBytes { Payloads.fillPattern($0, offset: 0) }
    return data
}

/// Every progress value a transfer reports, in order.
func collectProgress<V>(_ handle: TransferHandle<V>) -> Task<[TransferProgress], Never> {
    Task { await handle.progress.reduce(into: []) { $0.append($1) } }
}

/// Waits until the transfer reported a byte received (or ended without one).
func waitForFirstBytes<V>(_ handle: TransferHandle<V>) async {
    for await progress in handle.progress where progress.bytesReceived > 0 { return }
}

/// Tokens "old" then, after a refresh, "new"; counts the refreshes.
final class RefreshingTokens: TokenProvider {
    private let count = LockedValue(0)

    var refreshes: Int { count.withLock { $0 } }

    func currentToken() async throws -> String { count.withLock { $0 } == 0 ? "old" : "new" }

    func refreshToken(replacing rejected: String) async throws -> String {
        count.withLock { $0 += 1 }
        return "new"
    }
}
