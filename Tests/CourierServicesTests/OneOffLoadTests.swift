import CourierTestServer
import Foundation
import Testing

@testable import CourierServices

/// `Payloads.smallJSON`, the body of the test server's `/json`.
private struct User: Decodable, Sendable, Equatable {
    var id: Int
    var name: String
}

/// Adds `X-One-Off: yes` to every request.
private struct MarkingDecorator: RequestDecorator {
    func decorate(_ request: inout HTTPRequest) async throws {
        request.headerFields[HTTPField.Name("X-One-Off")!] = "yes"
    }
}

@Suite("One-off loads without a Resource")
struct OneOffLoadTests {
    @Test("a URL string decodes into the given type through the coordinator's decorators and events")
    func decodesFromURLString() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [MarkingDecorator()]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let events = coordinator.events()
            let loaded = try await coordinator.load(User.self, from: "\(server.baseURL)/json")
            #expect(loaded.value == User(id: 7, name: "Ada Lovelace"))
            #expect(loaded.source == .network && loaded.response.status.code == 200)
            let sent = server.requests(to: "/json")
            #expect(sent.count == 1)
            #expect(sent.first?.header("X-One-Off") == "yes")
            var seen: [String] = []
            for await event in events {
                seen.append("\(event.kind)")
                if event.kind.name == .finished { break }
            }
            #expect(seen.first?.hasPrefix("started") == true)
            #expect(seen.contains { $0.hasPrefix("decorated") })
            #expect(seen.last?.hasPrefix("finished") == true)
        }
    }

    @Test("a status outside 2xx is unacceptableStatus; a body that does not decode is decodingFailed")
    func failures() async throws {
        try await withCoordinator { server, coordinator in
            let missing = await serviceError {
                _ = try await coordinator.load(User.self, from: "\(server.baseURL)/status")
            }
            #expect(missing?.code == .unacceptableStatus && missing?.status?.code == 404)
            let mismatch = await serviceError {
                _ = try await coordinator.load([Int].self, from: "\(server.baseURL)/json")
            }
            #expect(mismatch?.code == .decodingFailed)
            let bad = await serviceError { _ = try await coordinator.load(User.self, from: "\(server.baseURL)/a b") }
            #expect(bad?.code == .invalidRequest)
            #expect(server.snapshot.requestCount == 2)
        }
    }

    @Test("two identical concurrent one-off GETs share one transfer")
    func coalesces() async throws {
        try await withCoordinator { server, coordinator in
            let url = "\(server.baseURL)/gate?name=oneoff"
            async let first = coordinator.load(Gate.self, from: url)
            async let second = coordinator.load(Gate.self, from: url)
            await coordinator.waitForWaiters(2)
            server.openGate("oneoff")
            let results = try await [first, second]
            #expect(results.map(\.value) == [Gate(gate: "oneoff", served: 1), Gate(gate: "oneoff", served: 1)])
            #expect(results.filter(\.wasCoalesced).count == 1)
            #expect(server.requests(to: "/gate").count == 1)
        }
    }

    @Test("a built request with a body, a given decoder, String and a cache policy")
    func requestBodyDecoderAndCache() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let request = try HTTPRequest(method: .post, urlString: "\(server.baseURL)/echo")
            let echoed = try await coordinator.load(
                String.self, from: request, body: .string("hello", contentType: "text/plain"))
            #expect(echoed.value.contains(#""body":"hello""#))
            #expect(echoed.value.contains(#""method":"POST""#))

            let foundation = try await coordinator.load(
                User.self, from: "\(server.baseURL)/json", decoder: JSONDecoder())
            #expect(foundation.value == User(id: 7, name: "Ada Lovelace"))

            let url = "\(server.baseURL)/cache?key=oneoff"
            let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(600))
            let stored = try await coordinator.load(Versioned.self, from: url, cachePolicy: policy)
            let again = try await coordinator.load(Versioned.self, from: url, cachePolicy: policy)
            #expect(stored.source == .network && again.source == .memory)
            #expect(again.value == stored.value)
            let uncached = try await coordinator.load(Versioned.self, from: url)
            #expect(uncached.source == .network && uncached.value.served == 2)
            #expect(server.cacheCounts("oneoff").requests == 2)
        }
    }
}
