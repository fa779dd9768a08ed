import CourierTestServer
import CourierTesting
import Foundation
import Testing

struct Item: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct Items: Resource {
    typealias Response = [Item]
    var base: String
    var count: Int
    var token: String? = nil
    var headers: HTTPFields = [:]
    var decodingKeyPath: [String] { ["data", "items"] }
    var endpoint: Endpoint {
        var query = [URLQueryItem(name: "count", value: "\(count)")]
        if let token { query.append(URLQueryItem(name: "token", value: token)) }
        return Endpoint(base, path: "/envelope", query: query)
    }
}

struct EchoPost: Resource {
    typealias Response = Echo
    var base: String
    var text: String
    var method: HTTPRequest.Method { .post }
    var endpoint: Endpoint { Endpoint(base, path: "/echo") }
    var body: RequestBody? { .bytes(Data(text.utf8), contentType: "text/plain") }
    func decode(_ body: Data, response: HTTPResponse) throws -> Echo { try Echo(body) }
}

struct Status: Resource {
    typealias Response = Data
    var base: String
    var code: Int
    var endpoint: Endpoint { Endpoint(base, path: "/status/\(code)") }
    var retryPolicy: RetryPolicy? { RetryPolicy.none }
}

/// The values and errors one run of the scenario produced, comparable across record and replay.
struct Outcomes: Equatable {
    var small: [Item]
    var large: [Item]
    var echo: String?
    var echoMethod: String
    var notFound: Int?
    var refused: String?
}

func runScenario(base: String, coordinator: RequestCoordinator) async throws -> Outcomes {
    let secretHeaders: HTTPFields = [.authorization: "Bearer secret-token", .cookie: "session=abc123"]
    let small = try await Items(base: base, count: 2, token: "query-secret", headers: secretHeaders).load(
        using: coordinator)
    let large = try await Items(base: base, count: 50).load(using: coordinator)
    let echo = try await EchoPost(base: base, text: "héllo, body").load(using: coordinator)
    let notFound = await thrownCode { _ = try await Status(base: base, code: 404).load(using: coordinator) }
    let refused = await thrownCode {
        _ = try await Status(base: "http://127.0.0.1:9", code: 200).load(using: coordinator)
    }
    return Outcomes(
        small: small, large: large, echo: echo.body, echoMethod: echo.method, notFound: notFound?.status?.code,
        refused: refused?.code.description)
}

@Suite("HAR record and replay")
struct HARTests {
    @Test("a recording of the loopback server is valid HAR 1.2, redacted, and replays to identical values")
    func recordAndReplay() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString).har")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let recorder = HARRecorder(
            wrapping: transport, redactedQueryItems: HARRecorder.credentialQueryItems + ["token"])
        let recorded = try await runScenario(base: server.baseURL, coordinator: RequestCoordinator(transport: recorder))
        try recorder.write(to: path)
        await transport.shutdown()
        let base = server.baseURL
        await server.stop()

        #expect(recorded.small.count == 2 && recorded.large.count == 50)
        #expect(recorded.notFound == 404 && recorded.refused == "cannotConnect")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("secret-token") && !text.contains("abc123") && !text.contains("query-secret"))
        #expect(text.contains(HARRecorder.redacted))
        try validateHAR(Data(text.utf8), entries: 5)

        let replay = try HARReplayTransport(contentsOf: path)
        let replayed = try await runScenario(base: base, coordinator: RequestCoordinator(transport: replay))
        #expect(replayed == recorded)
    }

    @Test("unmatched requests fail naming the request, or pass through")
    func unmatched() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let recorder = HARRecorder(wrapping: transport)
        _ = try await Items(base: server.baseURL, count: 1).load(using: RequestCoordinator(transport: recorder))

        let strict = RequestCoordinator(transport: HARReplayTransport(recorder.document, unmatched: .fail))
        let error = await thrownCode { _ = try await Items(base: server.baseURL, count: 2).load(using: strict) }
        #expect(error?.code == .mockMissing)
        #expect(error?.message.contains("/envelope?count=2") == true)

        let lenient = RequestCoordinator(
            transport: HARReplayTransport(recorder.document, unmatched: .passThrough(transport)))
        #expect(try await Items(base: server.baseURL, count: 2).load(using: lenient).count == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test("one request recorded several times replays in order, then repeats the last")
    func repeatedRequests() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let recorder = HARRecorder(wrapping: transport)
        let recording = RequestCoordinator(transport: recorder)
        for _ in 0..<2 {
            _ = try await CountingResource(base: server.baseURL).load(using: recording)
        }
        await transport.shutdown()
        await server.stop()
        let replaying = RequestCoordinator(transport: HARReplayTransport(recorder.document))
        var served: [Int] = []
        for _ in 0..<3 {
            served.append(try await CountingResource(base: server.baseURL).load(using: replaying).attempts)
        }
        #expect(served == [1, 2, 2])
    }

    @Test("a file that is not HAR is decodingFailed; a missing one is fileAccess")
    func badFiles() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).har").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(#"{"log": {"entries": "no"}}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ServiceError.self) { _ = try HARReplayTransport(contentsOf: path) }
        do {
            _ = try HARReplayTransport(contentsOf: path + ".missing")
            Issue.record("expected fileAccess")
        } catch let error as ServiceError {
            #expect(error.code == .fileAccess)
        }
    }
}

struct Attempts: Codable, Sendable { var attempts: Int }

/// `/flaky` with no failures: answers `{"attempts": n}`, counting up.
struct CountingResource: Resource {
    typealias Response = Attempts
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/flaky", query: ["key": "har", "failures": "0"]) }
    var coalescing: Coalescing { .never }
}

/// Checks HAR 1.2's required fields and their JSON types.
func validateHAR(_ data: Data, entries expected: Int) throws {
    let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let log = try #require(root["log"] as? [String: Any])
    #expect(log["version"] as? String == "1.2")
    let creator = try #require(log["creator"] as? [String: Any])
    #expect(creator["name"] is String && creator["version"] is String)
    let entries = try #require(log["entries"] as? [[String: Any]])
    #expect(entries.count == expected)
    for entry in entries {
        let started = try #require(entry["startedDateTime"] as? String)
        #expect(
            (try? Date(started, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) != nil,
            "\(started)")
        #expect(entry["time"] is NSNumber)
        #expect(entry["cache"] is [String: Any])
        let timings = try #require(entry["timings"] as? [String: Any])
        for name in ["send", "wait", "receive"] { #expect(timings[name] is NSNumber, "timings.\(name)") }
        let request = try #require(entry["request"] as? [String: Any])
        for name in ["method", "url", "httpVersion"] { #expect(request[name] is String, "request.\(name)") }
        for name in ["cookies", "headers", "queryString"] { #expect(request[name] is [Any], "request.\(name)") }
        for name in ["headersSize", "bodySize"] { #expect(request[name] is NSNumber, "request.\(name)") }
        for header in request["headers"] as? [[String: Any]] ?? [] {
            #expect(header["name"] is String && header["value"] is String)
        }
        if let post = request["postData"] as? [String: Any] {
            #expect(post["mimeType"] is String && post["text"] is String)
        }
        let response = try #require(entry["response"] as? [String: Any])
        for name in ["status", "headersSize", "bodySize"] { #expect(response[name] is NSNumber, "response.\(name)") }
        for name in ["statusText", "httpVersion", "redirectURL"] {
            #expect(response[name] is String, "response.\(name)")
        }
        for name in ["cookies", "headers"] { #expect(response[name] is [Any], "response.\(name)") }
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] is NSNumber && content["mimeType"] is String)
    }
}
