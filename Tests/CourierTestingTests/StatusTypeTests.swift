import CourierTesting
import Foundation
import Testing

/// Statuses are `HTTPResponse.Status` on the public surface: retry sets, cacheable sets,
/// events and mock replies.
@Suite("Statuses as HTTPResponse.Status")
struct StatusTypeTests {
    @Test("a RetryPolicy with a status set retries exactly those statuses")
    func retryableStatusesAreStatuses() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/7", with: [.status(.conflict), .json(#"{"id": 7, "name": "Ada"}"#)])
        mock.respond(to: .get, "/v1/users/8", with: [.status(.serviceUnavailable), .json(#"{"id": 8, "name": "Bo"}"#)])
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = ImmediateTestClock()
        configuration.retryPolicy = RetryPolicy(jitter: 0, retryableStatuses: [.conflict])
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        #expect(configuration.retryPolicy.retryableStatuses == [HTTPResponse.Status.conflict])
        #expect(RetryPolicy.default.retryableStatuses == [408, 429, 502, 503, 504])
        #expect(try await UserResource(id: 7).load(using: coordinator).name == "Ada")
        let error = await thrownCode { _ = try await UserResource(id: 8).load(using: coordinator) }
        #expect(error?.status == .serviceUnavailable)
        #expect(mock.requests("/v1/users/7").count == 2)
        #expect(mock.requests("/v1/users/8").count == 1)
        await coordinator.shutdown()
    }

    @Test("finished and failed events carry HTTPResponse.Status values")
    func eventsCarryStatuses() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/7", with: .json(#"{"id": 7, "name": "Ada"}"#, status: .created))
        mock.respond(to: .get, "/v1/users/9", with: .status(.notFound))
        let coordinator = coordinator(mock)
        let events = coordinator.events()
        _ = try await UserResource(id: 7).load(using: coordinator)
        _ = await thrownCode { _ = try await UserResource(id: 9).load(using: coordinator) }
        await coordinator.shutdown()
        var statuses: [String] = []
        for await event in events {
            switch event.kind.name {
            case .finished: statuses.append("finished \(event.kind.status?.code ?? 0)")
            case .failed: statuses.append("failed \(event.kind.status?.code ?? 0)")
            default: continue
            }
        }
        #expect(statuses == ["finished 201", "failed 404"])
    }

    @Test("a fixture's status line becomes the mock response's status")
    func mockResponseStatus() throws {
        let parsed = try MockResponse(fixture: Data("HTTP/1.1 418 I'm a teapot\n\n".utf8), source: "x")
        #expect(parsed.status == HTTPResponse.Status(code: 418))
        #expect(MockResponse.json("{}").status == .ok)
        #expect(CacheableStatus.including([.gone, .notFound]).description == "including([404, 410])")
    }
}
