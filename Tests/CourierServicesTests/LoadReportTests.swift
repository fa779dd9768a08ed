import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// What a load reports besides its value, what the coordinator's event stream keeps, and the
/// coalescing knobs, each set and read as a caller would.
@Suite("What a load reports")
struct LoadReportTests {
    /// The body's length times `factor`: a decoded value that depends on an instance property
    /// the request does not show.
    struct Scaled: Resource {
        typealias Response = Int
        let base: String
        let gate: String
        let factor: Int
        var shares = true
        var headers: HTTPFields = [:]
        var endpoint: Endpoint { Endpoint(base, path: "/gate", query: ["name": gate]) }
        var sharesDecodedResponse: Bool { shares }
        func decode(_ body: Data, response: HTTPResponse) throws -> Int { body.count * factor }
    }

    /// Starts `first`, waits until the server holds its request, starts `second`, waits until
    /// the coordinator says it joined a load in flight (or, when `joins` is false, until the
    /// server holds a second request), then opens the gate.
    func overlap(
        _ first: Scaled, _ second: Scaled, joins: Bool = true, server: TestServer, coordinator: RequestCoordinator
    ) async throws -> (Loaded<Int>, Loaded<Int>) {
        let events = coordinator.events()
        let firstLoad = Task { try await coordinator.load(first) }
        #expect(await server.waitUntilHeld(first.gate, count: 1))
        let secondLoad = Task { try await coordinator.load(second) }
        if joins {
            #expect(await waitForEvents(1, .coalesced, in: events), "the second load never joined the first")
        } else {
            #expect(await server.waitUntilHeld(first.gate, count: 2))
        }
        server.openGate(first.gate)
        return (try await firstLoad.value, try await secondLoad.value)
    }

    @Test("a load that joined an identical one in flight says it was coalesced; the first does not")
    func wasCoalesced() async throws {
        try await withCoordinator { server, coordinator in
            let resource = Scaled(base: server.baseURL, gate: "coalesced", factor: 1)
            let (first, second) = try await overlap(resource, resource, server: server, coordinator: coordinator)
            #expect(!first.wasCoalesced && second.wasCoalesced)
            #expect(first.value == second.value)
            #expect(first.requestID != second.requestID)
            #expect(server.requests(to: "/gate").count == 1)
        }
    }

    @Test("waiters share one decoded value unless the resource says its decoding is its own")
    func sharesDecodedResponse() async throws {
        try await withCoordinator { server, coordinator in
            let shared = try await overlap(
                Scaled(base: server.baseURL, gate: "shared", factor: 1),
                Scaled(base: server.baseURL, gate: "shared", factor: 10), server: server, coordinator: coordinator)
            #expect(shared.1.wasCoalesced)
            #expect(shared.1.value == shared.0.value)  // the first waiter's decoding, shared

            let own = try await overlap(
                Scaled(base: server.baseURL, gate: "own", factor: 1, shares: false),
                Scaled(base: server.baseURL, gate: "own", factor: 10, shares: false), server: server,
                coordinator: coordinator)
            #expect(own.1.wasCoalesced)
            #expect(own.0.value > 0 && own.1.value == own.0.value * 10)
            #expect(server.requests(to: "/gate").count == 2)
        }
    }

    @Test("a header the configuration ignores for coalescing does not keep two loads apart")
    func headersIgnoredForCoalescing() async throws {
        let requestTag = HTTPField.Name("X-Request-Tag")!
        var ignoring = RequestCoordinator.Configuration()
        ignoring.headersIgnoredForCoalescing.append(requestTag)
        try await withCoordinator(configuration: ignoring) { server, coordinator in
            var first = Scaled(base: server.baseURL, gate: "ignored", factor: 1)
            first.headers[requestTag] = "a"
            var second = first
            second.headers[requestTag] = "b"
            let (_, joined) = try await overlap(first, second, server: server, coordinator: coordinator)
            #expect(joined.wasCoalesced)
            #expect(server.requests(to: "/gate").count == 1)
        }
        try await withCoordinator { server, coordinator in
            var first = Scaled(base: server.baseURL, gate: "kept", factor: 1)
            first.headers[requestTag] = "a"
            var second = first
            second.headers[requestTag] = "b"
            let (_, apart) = try await overlap(first, second, joins: false, server: server, coordinator: coordinator)
            #expect(!apart.wasCoalesced)
            #expect(server.requests(to: "/gate").count == 2)
        }
    }

    @Test("the decorated event counts the coordinator's and the resource's decorators")
    func decoratorCount() async throws {
        struct Stamp: RequestDecorator {
            let name: String
            func decorate(_ request: inout HTTPRequest) async throws {
                request.headerFields[HTTPField.Name("X-Stamp-\(name)")!] = "1"
            }
        }
        struct Stamped: Resource {
            typealias Response = Data
            var endpoint: Endpoint { Endpoint("http://mock.test", path: "/stamped") }
            var decorators: [any RequestDecorator] { [Stamp(name: "resource")] }
        }
        let mock = MockTransport()
        mock.respond(to: .get, "/stamped", with: .status(200))
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [Stamp(name: "a"), Stamp(name: "b")]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let events = coordinator.events()
        _ = try await Stamped().load(using: coordinator)
        await coordinator.shutdown()  // ends the stream after what was emitted
        var counts: [Int?] = []
        for await event in events where event.kind.name == .decorated { counts.append(event.kind.decoratorCount) }
        #expect(counts == [3])
        #expect(mock.requests.first?.request.headerFields[HTTPField.Name("X-Stamp-resource")!] == "1")
    }

    @Test("a subscriber that lags keeps the newest eventBufferSize events")
    func eventBufferSize() async throws {
        struct Ping: Resource {
            typealias Response = Data
            let index: Int
            var endpoint: Endpoint { Endpoint("http://mock.test", path: "/ping", query: ["i": "\(index)"]) }
        }
        let mock = MockTransport()
        mock.respondToAll { _, _ in .status(200) }
        var configuration = RequestCoordinator.Configuration()
        configuration.eventBufferSize = 4
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let lagging = coordinator.events()
        let everything = coordinator.events(bufferingNewest: 1_000)
        for index in 0..<5 { _ = try await Ping(index: index).load(using: coordinator) }
        await coordinator.shutdown()  // ends the streams
        let all = await everything.reduce(into: [CoordinatorEvent]()) { $0.append($1) }
        let kept = await lagging.reduce(into: [CoordinatorEvent]()) { $0.append($1) }
        #expect(all.count > 4)
        #expect(kept.count == 4)
        #expect(kept.map(\.requestID) == all.suffix(4).map(\.requestID))
        #expect(kept.map(\.kind.name) == all.suffix(4).map(\.kind.name))
    }
}
