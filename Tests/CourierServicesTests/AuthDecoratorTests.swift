import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Logging
import Testing

/// `/echo` with the decorators and query under test.
struct EchoResource: Resource {
    typealias Response = Data
    let base: String
    var path = "/echo"
    var query: [String: String] = [:]
    var decorators: [any RequestDecorator] = []
    var method: HTTPRequest.Method = .get
    var body: RequestBody? = nil
    var endpoint: Endpoint {
        Endpoint(
            base, path: path,
            query: query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) })
    }
}

@Suite("Authentication decorators")
struct AuthDecoratorTests {
    @Test("Basic sends base64(user:password) and never shows the password")
    func basic() async throws {
        let basic = try BasicAuthDecorator(username: "ada", password: "pa:ss-wörd")
        try await withCoordinator { server, coordinator in
            let echo = try Echo(
                try await EchoResource(base: server.baseURL, decorators: [basic]).load(using: coordinator))
            #expect(echo.header("Authorization") == "Basic " + Data("ada:pa:ss-wörd".utf8).base64EncodedString())
        }
        for text in ["\(basic)", String(reflecting: basic), "\([basic] as [any RequestDecorator])"] {
            #expect(!text.contains("pa:ss") && !text.contains(Data("ada:pa:ss-wörd".utf8).base64EncodedString()))
            #expect(text.contains("ada"))
        }
    }

    @Test(
        "invalid credentials are refused with invalidRequest",
        arguments: [
            ("a:b", "p"), ("ada", "p\r\nX-Admin: 1"), ("ada\n", "p"), ("ada", "p\0"),
        ])
    func invalidBasic(username: String, password: String) {
        #expect { _ = try BasicAuthDecorator(username: username, password: password) } throws: { error in
            (error as? ServiceError)?.code == .invalidRequest
        }
    }

    @Test(
        "invalid API keys and names are refused with invalidRequest",
        arguments: [
            ("k\r\n1", APIKeyDecorator.Placement.header("X-API-Key")), ("k", .header("X Bad")),
            ("k\0", .queryItem("api_key")), ("k", .queryItem("")),
        ])
    func invalidKey(key: String, placement: APIKeyDecorator.Placement) {
        #expect { _ = try APIKeyDecorator(key: key, in: placement) } throws: { error in
            (error as? ServiceError)?.code == .invalidRequest
        }
    }

    @Test("an API key goes in its header, or percent-encoded in the query beside the existing items")
    func apiKeyOnTheWire() async throws {
        let header = try APIKeyDecorator(key: "hdr-key-1", in: .header("X-API-Key"))
        let query = try APIKeyDecorator(key: "q k&=/é", in: .queryItem("api_key"))
        try await withCoordinator { server, coordinator in
            let byHeader = try Echo(
                try await EchoResource(base: server.baseURL, decorators: [header]).load(using: coordinator))
            #expect(byHeader.header("X-API-Key") == "hdr-key-1")
            #expect(byHeader.uri == "/echo")
            let byQuery = try Echo(
                try await EchoResource(
                    base: server.baseURL, query: ["page": "2", "api_key": "stale"], decorators: [query]
                )
                .load(using: coordinator))
            #expect(byQuery.uri == "/echo?page=2&api_key=q%20k%26%3D%2F%C3%A9")
            let bare = try Echo(
                try await EchoResource(base: server.baseURL, decorators: [query]).load(using: coordinator))
            #expect(bare.uri == "/echo?api_key=q%20k%26%3D%2F%C3%A9")
        }
        for text in ["\(header)", String(reflecting: query)] {
            #expect(!text.contains("hdr-key-1") && !text.contains("q k"))
        }
    }

    @Test("each API key, in a header or the query, has its own cache entries")
    func apiKeyPartitionsTheCache() async throws {
        struct Cached: Resource {
            typealias Response = Data
            let base: String
            let key: String
            let decorator: APIKeyDecorator
            var decorators: [any RequestDecorator] { [decorator] }
            var cachePolicy: CachePolicy { .http() }
            var endpoint: Endpoint { .cacheRoute(base, key: key, query: ["cc": "max-age=600"]) }
        }
        try await withCoordinator { server, coordinator in
            for placement in [APIKeyDecorator.Placement.header("X-API-Key"), .queryItem("api_key")] {
                let key = "partition-\(placement.name)"
                let alice = try APIKeyDecorator(key: "alice", in: placement)
                let bob = try APIKeyDecorator(key: "bob", in: placement)
                for decorator in [alice, alice, bob, bob, alice] {
                    _ = try await Cached(base: server.baseURL, key: key, decorator: decorator).load(using: coordinator)
                }
                #expect(server.cacheCounts(key).requests == 2, "\(placement.name)")
            }
        }
    }

    @Test("a HAR recording and the logs hold no API key, Basic credentials or query key")
    func redactedInHARAndLogs() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString).har")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let recorder = HARRecorder(wrapping: transport)
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CapturingLogHandler(store: store) }
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [try APIKeyDecorator(key: "header-secret-1", in: .header("X-API-Key"))]
        let coordinator = RequestCoordinator(
            transport: recorder, configuration: configuration, backgroundLogger: logger)
        let query = try APIKeyDecorator(key: "query-secret-2", in: .queryItem("api_key"))
        let basic = try BasicAuthDecorator(username: "ada", password: "basic-secret-3")
        // Not `/echo`: its response body would repeat the credentials the request carried.
        _ = try await EchoResource(
            base: server.baseURL, path: "/json", query: ["page": "1"], decorators: [query, basic]
        )
        .load(using: coordinator)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
        try recorder.write(to: path)

        let text = try String(contentsOfFile: path, encoding: .utf8)
        let basicToken = Data("ada:basic-secret-3".utf8).base64EncodedString()
        #expect(text.contains("X-API-Key") && text.contains("api_key") && text.contains("REDACTED"))
        for secret in ["header-secret-1", "query-secret-2", "basic-secret-3", basicToken] {
            #expect(!text.contains(secret), "\(secret)")
        }
        #expect(recorder.recorded.first?.request.url.contains("page=1") == true)
        let logs = store.all.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(logs.contains("load started"))
        for secret in ["header-secret-1", "query-secret-2", "basic-secret-3", basicToken] {
            #expect(!logs.contains(secret))
        }
    }
}
