import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Synchronization
import Testing

/// Appends its name to `X-Trail`, or refuses.
struct TrailDecorator: RequestDecorator {
    let name: String
    var refuses = false

    struct Refused: Error {}

    func decorate(_ request: inout HTTPRequest) async throws {
        if refuses { throw Refused() }
        await Task.yield()  // decorators are async: prove the order survives suspension
        let trail = request.headerFields[HTTPField.Name("X-Trail")!].map { $0 + "," } ?? ""
        request.headerFields[HTTPField.Name("X-Trail")!] = trail + name
    }
}

/// Tokens that count refreshes; refresh can be made to fail.
final class CountingTokens: TokenProvider {
    let refreshes = Atomic<Int>(0)
    let fails: Bool
    let initial: String
    let refreshed: String

    init(initial: String = "old", refreshed: String = "new", fails: Bool = false) {
        self.initial = initial
        self.refreshed = refreshed
        self.fails = fails
    }

    struct RefreshFailed: Error {}

    func currentToken() async throws -> String { initial }
    func refreshToken(replacing rejected: String) async throws -> String {
        refreshes.add(1, ordering: .relaxed)
        await Task.yield()
        if fails { throw RefreshFailed() }
        return refreshed
    }
}

@Suite("Decorators")
struct DecoratorTests {
    struct Echoed: Resource {
        typealias Response = Data
        var path = "/echo"
        var extra: [any RequestDecorator] = []
        var decorators: [any RequestDecorator] { extra }
        var endpoint: Endpoint { Endpoint("http://mock.test", path: path) }
    }

    @Test("coordinator decorators run first, then the resource's, in order")
    func order() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/echo", with: .status(204))
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [TrailDecorator(name: "c1"), TrailDecorator(name: "c2")]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        _ = try await Echoed(extra: [TrailDecorator(name: "r1"), TrailDecorator(name: "r2")]).load(using: coordinator)
        #expect(mock.requests.first?.request.headerFields[HTTPField.Name("X-Trail")!] == "c1,c2,r1,r2")
    }

    @Test("a refusing decorator fails the load with decorationFailed and nothing is sent")
    func refusal() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/echo", with: .status(204))
        let coordinator = RequestCoordinator(transport: mock)
        let error = await serviceError {
            _ = try await Echoed(extra: [TrailDecorator(name: "a"), TrailDecorator(name: "no", refuses: true)])
                .load(using: coordinator)
        }
        #expect(error?.code == .decorationFailed)
        #expect(error?.underlying is TrailDecorator.Refused)
        #expect(mock.requestCount == 0)
    }

    @Test("a decorated request is checked for CR/LF injection before it is sent")
    func injection() async throws {
        // swift-http-types already turns CR/LF in field values into spaces; a path or
        // authority rewritten by a decorator is checked by Courier.
        struct Injector: RequestDecorator {
            func decorate(_ request: inout HTTPRequest) async throws {
                request.path = "/echo\r\nX-Admin: 1"
            }
        }
        let mock = MockTransport()
        let coordinator = RequestCoordinator(transport: mock)
        let error = await serviceError { _ = try await Echoed(extra: [Injector()]).load(using: coordinator) }
        #expect(error?.code == .invalidRequest)
        #expect(mock.requestCount == 0)
    }

    @Test("a 401 storm of 50 requests refreshes the token once and all 50 succeed (mock)")
    func stormOnMock() async throws {
        let mock = MockTransport()
        mock.respondToAll { request, _ in
            request.headerFields[.authorization] == "Bearer new" ? .json(#"{"ok":true}"#) : .status(401)
        }
        let tokens = CountingTokens()
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        mock.holdResponses()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 { group.addTask { _ = try await Echoed(path: "/item/\(i)").load(using: coordinator) } }
            #expect(await mock.waitForRequests(50))
            mock.releaseResponses()
            try await group.waitForAll()
        }
        #expect(tokens.refreshes.load(ordering: .relaxed) == 1)
        #expect(mock.requestCount == 100)
    }

    @Test("a failed refresh fails every request of the storm cleanly, without a second refresh")
    func stormRefreshFails() async throws {
        let mock = MockTransport()
        mock.respondToAll { _, _ in .status(401) }
        let tokens = CountingTokens(fails: true)
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        mock.holdResponses()
        let codes = await withTaskGroup(of: ServiceError.Code?.self) { group in
            for i in 0..<50 {
                group.addTask {
                    do {
                        _ = try await Echoed(path: "/item/\(i)").load(using: coordinator)
                        return nil
                    } catch let error as ServiceError { return error.code } catch { return .unknown }
                }
            }
            #expect(await mock.waitForRequests(50))
            mock.releaseResponses()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(codes.count == 50)
        #expect(codes.allSatisfy { $0 == .decorationFailed })
        #expect(tokens.refreshes.load(ordering: .relaxed) == 1)
        #expect(mock.requestCount == 50)  // nothing replayed
    }

    @Test("a request rejected again after its replay fails with 401, without looping")
    func noLoops() async throws {
        let mock = MockTransport()
        mock.respondToAll { _, _ in .status(401) }
        let tokens = CountingTokens()
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let error = await serviceError { _ = try await Echoed().load(using: coordinator) }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.status?.code == 401)
        #expect(mock.requestCount == 2)
        #expect(tokens.refreshes.load(ordering: .relaxed) == 1)
    }

    @Test("a 401 storm of 50 requests against the server: one refresh, 50 successes")
    func stormOverLoopback() async throws {
        let tokens = CountingTokens(initial: "expired", refreshed: "fresh")
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            struct Auth: Resource {
                typealias Response = Data
                let base: String
                let index: Int
                var endpoint: Endpoint { Endpoint(base, path: "/auth", query: ["valid": "fresh", "i": "\(index)"]) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<50 {
                    group.addTask { _ = try await Auth(base: server.baseURL, index: i).load(using: coordinator) }
                }
                try await group.waitForAll()
            }
            #expect(tokens.refreshes.load(ordering: .relaxed) == 1)
            let requests = server.requests(to: "/auth")
            #expect(requests.count == 100)
            #expect(requests.filter { $0.header("Authorization") == "Bearer fresh" }.count == 50)
        }
    }
}
