import CourierTesting
import Foundation
import Testing

/// `CoordinatorEvent.Kind` is a struct over a private enum: names to switch on, fields to read.
@Suite("Coordinator event kinds as structs")
struct EventKindTests {
    @Test("a retried load reports started, retried and finished with their fields")
    func fieldsOfARetriedLoad() async throws {
        let mock = MockTransport()
        mock.respond(
            to: .get, "/v1/users/7", with: [.status(.serviceUnavailable), .json(#"{"id": 7, "name": "Ada"}"#)])
        let coordinator = coordinator(mock)
        let events = coordinator.events()
        _ = try await UserResource(id: 7, query: [URLQueryItem(name: "token", value: "secret")]).load(
            using: coordinator)
        await coordinator.shutdown()
        var kinds: [CoordinatorEvent.Kind] = []
        for await event in events { kinds.append(event.kind) }
        #expect(kinds.map(\.name) == [.started, .retried, .finished])
        #expect(kinds[0].method == .get && kinds[0].url == "https://api.example.com/v1/users/7")
        #expect(kinds[1].attempt == 1 && kinds[1].reason == "HTTP 503" && kinds[1].delay != nil)
        #expect(kinds[1].status == nil && kinds[1].cacheEvent == nil)
        #expect(kinds[2].status == .ok && kinds[2].metrics != nil && kinds[2].duration != nil)
        #expect(kinds[2].errorCode == nil && kinds[2].attempt == nil)
        #expect(CoordinatorEvent.Kind.coalesced.name.description == "coalesced")
        #expect(CoordinatorEvent.Kind.cache(.miss(key: "k")).cacheEvent == .miss(key: "k"))
    }

    @Test("a failed load reports its error code and status")
    func fieldsOfAFailedLoad() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/9", with: .status(.notFound))
        let coordinator = coordinator(mock)
        let events = coordinator.events()
        _ = await thrownCode { _ = try await UserResource(id: 9).load(using: coordinator) }
        await coordinator.shutdown()
        var failed: [CoordinatorEvent.Kind] = []
        for await event in events where event.kind.name == .failed { failed.append(event.kind) }
        #expect(failed.count == 1)
        #expect(failed.first?.errorCode == .unacceptableStatus && failed.first?.status == .notFound)
        #expect(failed.first?.metrics == nil && failed.first?.duration != nil)
    }
}
