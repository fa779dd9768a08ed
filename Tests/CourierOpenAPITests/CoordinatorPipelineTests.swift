import CourierCore
import CourierOpenAPI
import CourierServices
import CourierTestServer
import CourierTesting
import CourierTransport
import Foundation
import HTTPTypes
import InMemoryTracing
import OpenAPIRuntime
import Testing
import Tracing

@testable import CourierServices

/// What the coordinator adds to generated operations: retries, coalescing, token refresh,
/// the cache per operation ID, events named by operation, HAR replay.
@Suite("Generated client through the coordinator")
struct CoordinatorPipelineTests {
    @Test("503 with Retry-After is retried after the server's delay, then the typed 200 arrives")
    func retriesAfter503() async throws {
        let clock = ImmediateTestClock()
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = clock
        try await withClient(configuration: configuration) { server, _, client in
            let item = try await client.getItem(path: .init(itemID: "flaky-r1")).ok.body.json
            #expect(item.served == 3)
            #expect(server.requests(to: "/openapi/items/flaky-r1").count == 3)
            #expect(clock.sleeps == [.seconds(1), .seconds(1)])
        }
    }

    @Test("concurrent identical GETs share one request to the origin")
    func coalescedGETs() async throws {
        try await withClient { server, coordinator, client in
            let items = try await withThrowingTaskGroup(of: Components.Schemas.Item.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await client.getItem(path: .init(itemID: "gated-c1")).ok.body.json }
                }
                await server.waitUntilHeld("c1", count: 1)
                await coordinator.waitForWaiters(8)
                server.openGate("c1")
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(items.count == 8)
            #expect(items.allSatisfy { $0.id == "gated-c1" && $0.served == 1 })
            #expect(server.requests(to: "/openapi/items/gated-c1").count == 1)
        }
    }

    @Test("a 401 refreshes the bearer token once and replays the operation")
    func tokenRefresh() async throws {
        let tokens = RotatingTokens()
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withClient(configuration: configuration) { server, _, client in
            let item = try await client.getItem(path: .init(itemID: "auth-fresh")).ok.body.json
            #expect(item.id == "auth-fresh")
            #expect(tokens.refreshes == 1)
            let sent = server.requests(to: "/openapi/items/auth-fresh").map { $0.header("Authorization") }
            #expect(sent == ["Bearer stale", "Bearer fresh"])
        }
    }

    @Test("a cached operation revalidates with its ETag and decodes the stored body after a 304")
    func etagRevalidation() async throws {
        var transport = CourierClientTransport.Configuration()
        transport.cachePolicies["getItem"] = .http()
        try await withClient(transport: transport) { server, _, client in
            let first = try await client.getItem(path: .init(itemID: "etag-e1")).ok
            let second = try await client.getItem(path: .init(itemID: "etag-e1")).ok
            #expect(try first.body.json.served == 1)
            #expect(try second.body.json == first.body.json)  // the stored body, not a new one
            #expect(second.headers.ETag == "\"e1-v1\"")
            let sent = server.requests(to: "/openapi/items/etag-e1")
            #expect(sent.count == 2)
            #expect(sent.last?.header("If-None-Match") == "\"e1-v1\"")
        }
    }

    @Test("a cache policy applies to the operation it names and to no other")
    func cachePolicyPerOperation() async throws {
        var transport = CourierClientTransport.Configuration()
        transport.cachePolicies["getItem"] = .cacheElseNetwork(maxAge: .seconds(300))
        try await withClient(transport: transport) { server, _, client in
            let first = try await client.getItem(path: .init(itemID: "p1")).ok.body.json
            let again = try await client.getItem(path: .init(itemID: "p1")).ok.body.json
            #expect(again == first)
            #expect(server.requests(to: "/openapi/items/p1").count == 1)
            for _ in 0..<2 { _ = try await client.downloadFile(path: .init(name: "blob-10")).ok }
            #expect(server.requests(to: "/openapi/files/blob-10").count == 2)
        }
    }

    @Test("operations not given a cache policy are never cached (the default)")
    func noCacheByDefault() async throws {
        try await withClient { server, _, client in
            _ = try await client.getItem(path: .init(itemID: "etag-e2")).ok
            _ = try await client.getItem(path: .init(itemID: "etag-e2")).ok
            let sent = server.requests(to: "/openapi/items/etag-e2")
            #expect(sent.count == 2)
            #expect(sent.allSatisfy { $0.header("If-None-Match") == nil })
        }
    }

    @Test("the load's client span carries the operation ID")
    func spanNamesTheOperation() async throws {
        let tracer = InMemoryTracer()
        var configuration = RequestCoordinator.Configuration()
        configuration.tracer = tracer
        try await withClient(configuration: configuration) { _, _, client in
            _ = try await client.getItem(path: .init(itemID: "s1")).ok
            let spans = tracer.finishedSpans.filter { $0.kind == .client }
            #expect(spans.map { $0.attributes.get("courier.operation") } == [.string("getItem")])
        }
    }

    @Test("events carry the operation ID")
    func eventsNameTheOperation() async throws {
        try await withClient { _, coordinator, client in
            let stream = coordinator.events()
            _ = try await client.getItem(path: .init(itemID: "missing-e")).notFound
            _ = try await client.createItem(body: .json(.init(name: "e"))).created
            let events = await collectEvents(stream) { events in
                events.filter { $0.kind.name == .finished }.count == 2
            }
            let finished = events.filter { $0.kind.name == .finished }
            #expect(finished.map(\.operation) == ["getItem", "createItem"])
            #expect(events.allSatisfy { $0.operation != nil })
        }
    }

    @Test("a recorded session replays from HAR with no server")
    func harReplay() async throws {
        let curl = CurlTransport()
        let recorder = HARRecorder(wrapping: curl)
        let server = try await TestServer.start()
        let url = try #require(URL(string: "\(server.baseURL)/openapi"))
        let live = Client(serverURL: url, transport: CourierClientTransport(coordinator: .init(transport: recorder)))
        let recordedItem = try await live.getItem(path: .init(itemID: "h1"), query: .init(locale: "de")).ok.body.json
        let recordedNew = try await live.createItem(body: .json(.init(name: "har", price: 3))).created.body.json
        let recordedMissing = try await live.getItem(path: .init(itemID: "missing-h")).notFound.body.json
        await server.stop()
        await curl.shutdown()

        let replay = HARReplayTransport(recorder.document)
        let offline = Client(serverURL: url, transport: CourierClientTransport(coordinator: .init(transport: replay)))
        #expect(
            try await offline.getItem(path: .init(itemID: "h1"), query: .init(locale: "de")).ok.body.json
                == recordedItem)
        #expect(
            try await offline.createItem(body: .json(.init(name: "har", price: 3))).created.body.json == recordedNew)
        #expect(try await offline.getItem(path: .init(itemID: "missing-h")).notFound.body.json == recordedMissing)
        let unrecorded = await underlyingServiceError { _ = try await offline.getItem(path: .init(itemID: "h2")) }
        #expect(unrecorded?.code == .mockMissing)
    }
}

/// Hands out "stale" first and "fresh" after a refresh, counting refreshes.
final class RotatingTokens: TokenProvider {
    private let count = LockedValue(0)
    var refreshes: Int { count.withLock { $0 } }

    func currentToken() async throws -> String { "stale" }

    func refreshToken(replacing rejected: String) async throws -> String {
        count.withLock { $0 += 1 }
        return "fresh"
    }
}
