import CourierTesting
import Foundation
import Testing

struct UserService: Resource {
    typealias Response = User
    var id = 7
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/\(id)") }
}

struct Page<Item: Decodable & Sendable>: Resource {
    struct Body: Decodable, Sendable {
        var items: [Item]
        var next: String?
    }
    typealias Response = Body
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/items") }
}

struct MissingUser: Resource {
    typealias Response = User
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/404") }
}

struct BrokenUser: Resource {
    typealias Response = User
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/broken") }
}

struct Greeting: Resource {
    typealias Response = String
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/hello") }
}

struct Unfixtured: Resource {
    typealias Response = User
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/nothing") }
}

struct InlineUser: MockableResource {
    typealias Response = User
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/inline") }
    var mockResponse: MockResponse? { .json(#"{"id": 99, "name": "inline"}"#) }
}

/// A coordinator in mock mode over the test bundle's fixtures, and the transport it must never use.
func mockMode() -> (RequestCoordinator, MockTransport) {
    let transport = MockTransport()
    var configuration = RequestCoordinator.Configuration()
    configuration.responder = Fixtures(bundle: .module, subdirectory: "Fixtures")
    return (RequestCoordinator(transport: transport, configuration: configuration), transport)
}

@Suite("Fixtures and mock mode")
struct FixturesTests {
    @Test("a whole set of resources is served from fixtures; none reaches the transport")
    func mockModeServesEverything() async throws {
        let (coordinator, transport) = mockMode()
        #expect(try await UserService().load(using: coordinator) == User(id: 7, name: "Ada from a fixture"))
        #expect(try await Page<User>().load(using: coordinator).items.map(\.name) == ["One", "Two"])
        #expect(try await Greeting().load(using: coordinator) == "hello, plain text")
        #expect(try await InlineUser().load(using: coordinator).name == "inline")
        let missing = await thrownCode { _ = try await MissingUser().load(using: coordinator) }
        #expect(missing?.code == .unacceptableStatus && missing?.status?.code == 404)
        #expect(missing?.bodyExcerpt == #"{"title": "No such user"}"#)
        #expect(transport.requestCount == 0)
    }

    @Test("the whole-response form carries status and headers")
    func wholeResponseForm() async throws {
        let (coordinator, _) = mockMode()
        let greeting = try await Greeting().loadResponse(using: coordinator)
        #expect(greeting.response.headerFields[.contentType] == "text/plain")
        let parsed = try MockResponse(
            fixture: Data("HTTP/1.1 201 Created\nLocation: /users/8\n\n".utf8), source: "inline")
        #expect(parsed.status == 201 && parsed.headerFields[.location] == "/users/8" && parsed.body.isEmpty)
        #expect(throws: ServiceError.self) { try MockResponse(fixture: Data("HTTP/1.1 abc\n\n".utf8), source: "x") }
        #expect(throws: ServiceError.self) {
            try MockResponse(fixture: Data("HTTP/1.1 200 OK\nno colon\n\n".utf8), source: "x")
        }
        // More header lines than swift-http-types can hold: an error, not a trap.
        let many = "HTTP/1.1 200 OK\n" + String(repeating: "a: b\n", count: 70_000) + "\nbody"
        #expect(throws: ServiceError.self) { try MockResponse(fixture: Data(many.utf8), source: "x") }
    }

    @Test("a missing fixture is mockMissing naming the files looked for")
    func missingFixture() async throws {
        let (coordinator, _) = mockMode()
        let error = await thrownCode { _ = try await Unfixtured().load(using: coordinator) }
        #expect(error?.code == .mockMissing)
        #expect(error?.message.contains("Fixtures/Unfixtured.mock") == true)
        #expect(Fixtures.fileNames(for: Page<User>.self) == ["Page<User>.mock", "Page.mock"])
    }

    @Test("a fixture that is not JSON is a decodingFailed error naming the file")
    func malformedFixture() async throws {
        let (coordinator, _) = mockMode()
        let error = await thrownCode { _ = try await BrokenUser().load(using: coordinator) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.message.contains("BrokenUser.mock") == true)
    }

    @Test("fixtures from a directory the user names")
    func directoryFixtures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixtures-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"id": 1, "name": "from a directory"}"#.utf8).write(
            to: directory.appendingPathComponent("UserService.mock"))
        var configuration = RequestCoordinator.Configuration()
        configuration.responder = Fixtures(directory: directory.path)
        let coordinator = RequestCoordinator(transport: MockTransport(), configuration: configuration)
        #expect(try await UserService().load(using: coordinator).name == "from a directory")
    }
}
