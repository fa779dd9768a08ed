import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// The README's "Testing your services" examples, compiled and run.
@Suite struct TestingReadmeExamplesTests {
    struct User: Codable, Sendable {
        let id: Int
        let name: String
    }

    struct UserService: Resource {
        typealias Response = User
        let id: Int
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/\(id)") }
    }

    struct Search: Resource {
        typealias Response = [User]
        let text: String
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/search", query: ["q": text]) }
        var decodingKeyPath: [String] { ["data", "items"] }
    }

    @Test func retriesAfterA503() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/*", with: .droppedConnection)
        mock.respond(
            to: .get, "/v1/users/7",
            with: [.serviceUnavailable(retryAfter: .seconds(1)), .json(#"{"id": 7, "name": "Ada"}"#)])
        mock.respond(
            to: .get, "/v1/search", query: ["q": "ada lovelace"], latency: .milliseconds(20),
            with: .json(encoding: ["data": ["items": [User(id: 1, name: "Ada Lovelace")]]]))
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = ImmediateTestClock()
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)

        #expect(try await UserService(id: 7).load(using: coordinator).name == "Ada")
        #expect(try await Search(text: "ada lovelace").load(using: coordinator).count == 1)
        #expect(mock.requests(to: .get, "/v1/users/7").count == 2)
        let error = await #expect(throws: ServiceError.self) { try await UserService(id: 8).load(using: coordinator) }
        #expect(error?.code == .connectionClosed)
    }

    @Test func mockMode() async throws {
        // Fixtures/UserService.mock holds {"id": 7, "name": "Ada from a fixture"}.
        var configuration = RequestCoordinator.Configuration()
        configuration.responder = Fixtures(bundle: .module, subdirectory: "Fixtures")
        let coordinator = RequestCoordinator(transport: MockTransport(), configuration: configuration)
        let user = try await UserService(id: 7).load(using: coordinator)
        #expect(user.name == "Ada from a fixture")
    }

    @Test func recordAndReplay() async throws {
        let server = try await TestServer.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("users.har").path
        // The README's base URL stands for the loopback server here.
        struct LocalUser: Resource {
            typealias Response = Data
            let base: String
            var endpoint: Endpoint { Endpoint(base, path: "/json", query: ["api_key": "k-123"]) }
        }
        let transport = CurlTransport()
        let recorder = HARRecorder(wrapping: transport, redactedQueryItems: ["api_key"])
        let recorded = try await LocalUser(base: server.baseURL).load(using: RequestCoordinator(transport: recorder))
        try recorder.write(to: file)
        await transport.shutdown()
        await server.stop()

        let replay = try HARReplayTransport(contentsOf: file)
        let replayed = try await LocalUser(base: server.baseURL).load(using: RequestCoordinator(transport: replay))
        #expect(replayed == recorded)
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("k-123") == false)
    }
}
