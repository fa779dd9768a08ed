import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Logging
import Testing

@testable import CourierServices

@Suite("load()")
struct LoadTests {
    struct Item: Codable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    struct Items: Resource {
        typealias Response = [Item]
        let base: String
        var count = 3
        var decodingKeyPath: [String] { ["data", "items"] }
        var endpoint: Endpoint { Endpoint(base, path: "/envelope", query: ["count": "\(count)"]) }
    }

    struct Text<Value: Sendable & Decodable>: Resource {
        typealias Response = Value
        let base: String
        var path = "/json"
        var acceptableStatus: Range<Int> = 200..<300
        var endpoint: Endpoint { Endpoint(base, path: path) }
    }

    struct Nothing: Resource {
        typealias Response = Void
        let base: String
        var endpoint: Endpoint { Endpoint(base, path: "/status/204") }
    }

    @Test("a key path decodes the payload inside an envelope")
    func keyPath() async throws {
        try await withCoordinator { server, coordinator in
            let items = try await Items(base: server.baseURL).load(using: coordinator)
            #expect(items == [Item(id: 0, name: "item-0"), Item(id: 1, name: "item-1"), Item(id: 2, name: "item-2")])
        }
    }

    @Test("a resource can decode with Foundation's JSONDecoder instead, key path included")
    func foundationDecoder() async throws {
        struct FoundationItems: Resource {
            typealias Response = [Item]
            let base: String
            var decodingKeyPath: [String] { ["data", "items"] }
            var endpoint: Endpoint { Endpoint(base, path: "/envelope", query: ["count": "2"]) }
            var jsonDecoder: any JSONBodyDecoder { JSONDecoder() }
        }
        #expect(Items(base: "http://127.0.0.1").jsonDecoder is CourierJSONDecoder)
        #expect(FoundationItems(base: "http://127.0.0.1").jsonDecoder is JSONDecoder)
        try await withCoordinator { server, coordinator in
            let items = try await FoundationItems(base: server.baseURL).load(using: coordinator)
            #expect(items == [Item(id: 0, name: "item-0"), Item(id: 1, name: "item-1")])
        }
    }

    @Test("a decoding failure is decodingFailed and names the coding path")
    func decodingPath() async throws {
        struct Strict: Codable, Sendable {
            var id: Int
            var name: Int
        }
        struct Bad: Resource {
            typealias Response = [Strict]
            let base: String
            var decodingKeyPath: [String] { ["data", "items"] }
            var endpoint: Endpoint { Endpoint(base, path: "/envelope") }
        }
        struct Missing: Resource {
            typealias Response = [Item]
            let base: String
            var decodingKeyPath: [String] { ["data", "nope"] }
            var endpoint: Endpoint { Endpoint(base, path: "/envelope") }
        }
        try await withCoordinator { server, coordinator in
            let error = await serviceError { _ = try await Bad(base: server.baseURL).load(using: coordinator) }
            #expect(error?.code == .decodingFailed)
            #expect(error?.message.contains("data.items[0].name") == true)
            #expect(error?.underlying is DecodingError)
            let missing = await serviceError { _ = try await Missing(base: server.baseURL).load(using: coordinator) }
            #expect(missing?.message.contains("missing key 'nope' at data") == true)
        }
    }

    @Test("a body still in a coding Courier does not know fails to decode with a message that says so")
    func undecodedCodingIsNamed() async throws {
        struct Encoded: Resource {
            typealias Response = [Item]
            let base: String
            var endpoint: Endpoint { Endpoint(base, path: "/unknown-encoding") }
        }
        try await withCoordinator { server, coordinator in
            let error = await serviceError { _ = try await Encoded(base: server.baseURL).load(using: coordinator) }
            #expect(error?.code == .decodingFailed)
            #expect(error?.message.contains("The body is still encoded (Content-Encoding: compress).") == true)
            #expect(error?.bodyExcerpt == "not really compressed")
        }
    }

    @Test("Void, Data and String responses")
    func plainResponses() async throws {
        try await withCoordinator { server, coordinator in
            try await Nothing(base: server.baseURL).load(using: coordinator)
            let data = try await Text<Data>(base: server.baseURL, path: "/bytes").load(using: coordinator)
            #expect(data.count == 1024)
            let text = try await Text<String>(base: server.baseURL, path: "/status/202").load(using: coordinator)
            #expect(text == "status 202")
        }
    }

    @Test("an unacceptable status carries status, headers and a body excerpt")
    func unacceptable() async throws {
        try await withCoordinator { server, coordinator in
            let error = await serviceError {
                _ = try await Text<Data>(base: server.baseURL, path: "/status/418").load(using: coordinator)
            }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.status?.code == 418)
            #expect(error?.response?.headerFields[.contentType] == "text/plain")
            #expect(error?.bodyExcerpt == "status 418")
            #expect(error?.isRetryable == false)
            let accepted = try await Text<String>(
                base: server.baseURL, path: "/status/418", acceptableStatus: 200..<500
            )
            .load(using: coordinator)
            #expect(accepted == "status 418")
        }
    }

    @Test("a resource's own validation rejects a response with validationFailed")
    func customValidation() async throws {
        struct NeedsHeader: Resource {
            typealias Response = Data
            let base: String
            struct MissingVersion: Error {}
            var endpoint: Endpoint { Endpoint(base, path: "/json") }
            func validate(_ response: HTTPResponse, body: Data) throws {
                if response.headerFields[HTTPField.Name("X-API-Version")!] == nil { throw MissingVersion() }
            }
        }
        try await withCoordinator { server, coordinator in
            let error = await serviceError { _ = try await NeedsHeader(base: server.baseURL).load(using: coordinator) }
            #expect(error?.code == .validationFailed)
            #expect(error?.underlying is NeedsHeader.MissingVersion)
        }
    }

    @Test("a bad endpoint is invalidRequest before anything is sent")
    func invalidEndpoint() async throws {
        let mock = MockTransport()
        let coordinator = RequestCoordinator(transport: mock)
        let error = await serviceError { _ = try await Text<Data>(base: "mock.test").load(using: coordinator) }
        #expect(error?.code == .invalidRequest)
        #expect(mock.requestCount == 0)
    }

    @Test("load() uses the task-local coordinator in scope")
    func taskLocalScope() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/json", with: .json(#"{"id":1,"name":"scoped"}"#))
        let coordinator = RequestCoordinator(transport: mock)
        let item = try await RequestCoordinator.$current.withValue(coordinator) {
            try await Text<Item>(base: "http://mock.test").load()
        }
        #expect(item == Item(id: 1, name: "scoped"))
        #expect(mock.requestCount == 1)
        #expect(RequestCoordinator.current === RequestCoordinator.shared)
    }

    @Test("loadResponse() returns head, metrics and source; send() serves a one-off request")
    func responseAndSend() async throws {
        try await withCoordinator { server, coordinator in
            let loaded = try await Text<Data>(base: server.baseURL).loadResponse(using: coordinator)
            #expect(loaded.response.status.code == 200)
            #expect(loaded.metrics.bytesReceived > 0)
            #expect(loaded.source == .network)
            #expect(loaded.wasCoalesced == false)
            let response = try await coordinator.send(
                HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/status/404"))
            #expect(response.head.status.code == 404)
        }
    }

    @Test("a load from a task that prefers the transport's executor keeps the preference")
    func loopExecutor() async throws {
        let server = try await TestServer.start()
        var configuration = CurlTransport.Configuration()
        configuration.threadName = "courier-ld"
        let transport = CurlTransport(configuration: configuration)
        var coordinatorConfiguration = RequestCoordinator.Configuration()
        coordinatorConfiguration.coalescesDuplicateLoads = false
        let coordinator = RequestCoordinator(transport: transport, configuration: coordinatorConfiguration)
        let threads = try await withTaskExecutorPreference(transport.taskExecutor) {
            var names: Set<String> = []
            for _ in 0..<20 {
                let item = try await Text<Item>(base: server.baseURL).load(using: coordinator)
                #expect(item.id == 7)
                let name = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                names.insert(name.trimmingCharacters(in: .newlines))
            }
            return names
        }
        // One loop thread ("courier-ld") or several ("courier-ld-0", …): never another thread.
        #expect(!threads.isEmpty && threads.allSatisfy { $0.hasPrefix("courier-ld") })
        #expect(MockTransport().taskExecutor == nil)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
    }

    @Test("shutdown drains, then refuses new loads with shutDown")
    func shutdown() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/json", with: .json(#"{"id":1,"name":"x"}"#))
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let inFlight = Task { try await Text<Item>(base: "http://mock.test").load(using: coordinator) }
        await coordinator.waitForWaiters(1)
        async let drained: Void = coordinator.shutdown()
        mock.releaseResponses()
        await drained
        #expect(try await inFlight.value.id == 1)
        let error = await serviceError { _ = try await Text<Item>(base: "http://mock.test").load(using: coordinator) }
        #expect(error?.code == .shutDown)
    }

    @Test("shutdown(cancellingInFlight:) cancels what is in flight")
    func shutdownCancelling() async throws {
        let mock = MockTransport()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let inFlight = Task { try await Text<Item>(base: "http://mock.test").load(using: coordinator) }
        await coordinator.waitForWaiters(1)
        #expect(await mock.waitForRequests(1))
        await coordinator.shutdown(cancellingInFlight: true)
        #expect(await serviceError { _ = try await inFlight.value }?.code == .cancelled)
        #expect(mock.cancelledCount == 1)
    }

    @Test("a route the mock does not know is mockMissing, naming the request")
    func mockMissing() async throws {
        let coordinator = RequestCoordinator(transport: MockTransport())
        let error = await serviceError {
            _ = try await Text<Data>(base: "http://mock.test", path: "/x").load(using: coordinator)
        }
        #expect(error?.code == .mockMissing)
        #expect(error?.message.contains("GET /x") == true)
    }

    @Test("events: started, decorated, coalesced, retried, finished, failed, each subscriber its own stream")
    func events() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/json", with: .json(#"{"id":1,"name":"x"}"#))
        mock.respond(to: .get, "/busy", with: .status(503))
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [TrailDecorator(name: "t")]
        configuration.clock = RecordingClock()
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 2, jitter: 0)
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let first = coordinator.events()
        let second = coordinator.events()
        mock.holdResponses()
        async let a = Text<Item>(base: "http://mock.test").load(using: coordinator)
        async let b = Text<Item>(base: "http://mock.test").load(using: coordinator)
        await coordinator.waitForWaiters(2)
        mock.releaseResponses()
        _ = try await (a, b)
        _ = await serviceError {
            _ = try await Text<Item>(base: "http://mock.test", path: "/busy").load(using: coordinator)
        }
        await coordinator.shutdown()
        var kinds: [String] = []
        for await event in first { kinds.append(event.kind.name.description) }
        var count = 0
        for await _ in second { count += 1 }
        #expect(kinds.filter { $0 == "started" }.count == 3)
        #expect(kinds.filter { $0 == "decorated" }.count == 3)
        #expect(kinds.filter { $0 == "coalesced" }.count == 1)
        #expect(kinds.filter { $0 == "retried" }.count == 1)
        #expect(kinds.filter { $0 == "finished" }.count == 2)
        #expect(kinds.filter { $0 == "failed" }.count == 1)
        #expect(count == kinds.count)
    }

    @Test("a slow subscriber keeps only the newest events")
    func boundedBuffer() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/json", with: .json(#"{"id":1,"name":"x"}"#))
        let coordinator = RequestCoordinator(transport: mock)
        let stream = coordinator.events(bufferingNewest: 4)
        for _ in 0..<10 { _ = try await Text<Item>(base: "http://mock.test").load(using: coordinator) }
        await coordinator.shutdown()
        var ids: [UInt64] = []
        for await event in stream { ids.append(event.requestID) }
        #expect(ids == [9, 9, 10, 10])
    }

    @Test("logs carry the request id and never credentials, query strings or bodies")
    func logging() async throws {
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "test") { _ in CapturingLogHandler(store: store) }
        let mock = MockTransport()
        mock.respond(to: .get, "/json", with: .json(#"{"id":1,"name":"secret-body"}"#))
        mock.respond(to: .get, "/denied", with: .status(403, body: Data("secret-denial".utf8)))
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: CountingTokens(initial: "secret-token"))]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration, backgroundLogger: logger)
        struct Query: Resource {
            typealias Response = Item
            var path = "/json"
            var endpoint: Endpoint { Endpoint("http://mock.test", path: path, query: ["api_key": "secret-key"]) }
        }
        _ = try await Query().load(using: coordinator)
        _ = await serviceError { _ = try await Query(path: "/denied").load(using: coordinator) }
        let records = store.all
        #expect(records.contains { $0.message == "load started" && $0.metadata["courier.request.id"] == "1" })
        #expect(
            records.contains {
                $0.message == "load failed" && $0.metadata["courier.error.code"] == "unacceptableStatus"
            })
        let everything = records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!everything.contains("secret"))

        let silent = RequestCoordinator(transport: mock)
        _ = try await Query().load(using: silent)  // no logger: nothing to check, nothing printed
    }
}
