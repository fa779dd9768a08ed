import CourierTesting
import Foundation
import Testing

struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct UserResource: Resource {
    typealias Response = User
    var id = 7
    var query: [URLQueryItem] = []
    var headers: HTTPFields = [:]
    var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/\(id)", query: query) }
}

func coordinator(_ mock: MockTransport, clock: ImmediateTestClock = ImmediateTestClock()) -> RequestCoordinator {
    var configuration = RequestCoordinator.Configuration()
    configuration.clock = clock
    return RequestCoordinator(transport: mock, configuration: configuration)
}

func thrownCode(_ body: () async throws -> Void) async -> ServiceError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? ServiceError
    }
}

@Suite("MockTransport")
struct MockTransportTests {
    @Test func aWaitForRequestsThatNeverComeEndsAtItsTimeout() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/ping", with: .json("{}"))
        #expect(await mock.waitForRequests(1, timeout: .milliseconds(50)) == false)
        _ = try await mock.send(HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/ping"))
        #expect(await mock.waitForRequests(1, timeout: .milliseconds(50)))
    }

    @Test("routes match method, path, query items, header fields, prefixes and predicates; the newest wins")
    func matching() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/*", with: .json(#"{"id": 0, "name": "anyone"}"#))
        mock.respond(to: .get, "/v1/users/7", with: .json(#"{"id": 7, "name": "Ada"}"#))
        mock.respond(to: .get, "/v1/users/7", query: ["fields": "a b"], with: .json(#"{"id": 7, "name": "query"}"#))
        mock.respond(
            to: .get, "/v1/users/7", headers: [.acceptLanguage: "fr"], with: .json(#"{"id": 7, "name": "Adà"}"#))
        mock.respond(
            matching: { $0.headerFields[.authorization] == "Bearer admin" },
            handler: { _, _ in .json(encoding: User(id: 1, name: "admin")) })
        let coordinator = coordinator(mock)
        #expect(try await UserResource(id: 9).load(using: coordinator).name == "anyone")
        #expect(try await UserResource().load(using: coordinator).name == "Ada")
        #expect(
            try await UserResource(query: [URLQueryItem(name: "fields", value: "a b")]).load(using: coordinator).name
                == "query")
        #expect(try await UserResource(headers: [.acceptLanguage: "fr"]).load(using: coordinator).name == "Adà")
        #expect(
            try await UserResource(headers: [.authorization: "Bearer admin"]).load(using: coordinator).name == "admin")
        #expect(mock.requests(to: .get, "/v1/users/7").count == 4)
    }

    @Test("an unmatched request fails with mockMissing naming it and the routes there are")
    func unmatched() async throws {
        let mock = MockTransport()
        mock.respond(to: .post, "/v1/users", with: .status(201))
        let error = await thrownCode { _ = try await UserResource(id: 8).load(using: coordinator(mock)) }
        #expect(error?.code == .mockMissing)
        #expect(error?.message.contains("GET /v1/users/8") == true)
        #expect(error?.message.contains("POST /v1/users") == true)
    }

    @Test("replies from Encodable values, files, status and headers; bodies are recorded")
    func replies() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mock-\(UUID().uuidString).json")
        try Data(#"{"id": 3, "name": "from a file"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/3", with: .file(atPath: file.path))
        mock.respond(
            to: .get, "/v1/users/4", with: .json(encoding: User(id: 4, name: "encoded"), headers: [.eTag: "\"4\""]))
        mock.respond(to: .get, "/v1/users/5", with: .file(atPath: "/nonexistent/user.json"))
        mock.respond(to: .post, "/v1/echo") { _, body in .status(200, body: body ?? Data()) }
        let coordinator = coordinator(mock)
        #expect(try await UserResource(id: 3).load(using: coordinator).name == "from a file")
        let four = try await UserResource(id: 4).loadResponse(using: coordinator)
        #expect(four.value.name == "encoded" && four.response.headerFields[.eTag] == "\"4\"")
        #expect(await thrownCode { _ = try await UserResource(id: 5).load(using: coordinator) }?.code == .fileAccess)
        let echo = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/echo")
        let response = try await coordinator.send(echo, body: .bytes(Data("ping".utf8)))
        #expect(response.body == Data("ping".utf8))
        #expect(mock.requests(to: .post, "/v1/echo").first?.body == Data("ping".utf8))
    }

    @Test(
        "every transport error code can be injected",
        arguments: [
            ServiceError.Code.timedOut, .cannotConnect, .dnsFailed, .tlsFailed, .pinningFailed, .connectionClosed,
            .truncatedBody, .malformedResponse, .headersTooLarge, .decompressionFailed, .unsupportedEncoding,
            .responseTooLarge, .tooManyRedirects, .redirectRefused, .fileAccess, .networkFailed, .invalidRequest,
        ])
    func failures(code: ServiceError.Code) async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/7", with: .failure(code))
        var resource = UserResource()
        resource.headers = [:]
        let coordinator = coordinator(mock)
        let error = await thrownCode { _ = try await NoRetry(inner: resource).load(using: coordinator) }
        #expect(error?.code == code)
    }

    @Test("faults in one line: dropped connection, timeout, corrupt gzip, 429 and 503 with Retry-After")
    func faults() async throws {
        let mock = MockTransport()
        let clock = ImmediateTestClock()
        mock.respond(
            to: .get, "/v1/users/1", with: [.droppedConnection, .timedOut, .json(#"{"id":1,"name":"third time"}"#)])
        mock.respond(
            to: .get, "/v1/users/2",
            with: [.tooManyRequests(retryAfter: .seconds(7)), .json(#"{"id":2,"name":"later"}"#)])
        mock.respond(
            to: .get, "/v1/users/3",
            with: [.serviceUnavailable(retryAfter: .seconds(2)), .json(#"{"id":3,"name":"up"}"#)])
        mock.respond(to: .get, "/v1/users/4", with: .corruptGzip)
        let coordinator = coordinator(mock, clock: clock)
        #expect(try await UserResource(id: 1).load(using: coordinator).name == "third time")
        #expect(try await UserResource(id: 2).load(using: coordinator).name == "later")
        #expect(try await UserResource(id: 3).load(using: coordinator).name == "up")
        #expect(clock.sleeps.suffix(2) == [.seconds(7), .seconds(2)])
        #expect(
            await thrownCode { _ = try await UserResource(id: 4).load(using: coordinator) }?.code
                == .decompressionFailed)
        #expect(mock.requests(to: nil, "/v1/users/4").count == 1)  // not retryable
    }

    @Test("per-route latency and held responses")
    func latencyAndHolding() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/7", latency: .milliseconds(50), with: .json(#"{"id":7,"name":"slow"}"#))
        let coordinator = coordinator(mock)
        let start = ContinuousClock.now
        _ = try await UserResource().load(using: coordinator)
        #expect(ContinuousClock.now - start >= .milliseconds(50))

        mock.holdResponses()
        let load = Task { try await UserResource().load(using: coordinator) }
        #expect(await mock.waitForRequests(2))
        mock.releaseResponses()
        #expect(try await load.value.name == "slow")
    }
}

/// `inner` without retries.
struct NoRetry: Resource {
    typealias Response = User
    var inner: UserResource
    var endpoint: Endpoint { inner.endpoint }
    var retryPolicy: RetryPolicy? { RetryPolicy.none }
}
