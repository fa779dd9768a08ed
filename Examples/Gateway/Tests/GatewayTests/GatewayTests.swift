import Courier
import Foundation
import GatewayApp
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// The gateway against a loopback catalog: every call goes through Courier for real.
@Suite struct GatewayTests {
    static func configuration(_ upstream: Upstream, cacheDirectory: String? = nil) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.catalogEnvironment = .development
        configuration.catalogDevelopmentURL = upstream.baseURL
        configuration.tokenURL = upstream.tokenURL
        configuration.clientSecret = "s3cret"
        configuration.cacheDirectory = cacheDirectory
        configuration.drainTimeout = .seconds(5)
        return configuration
    }

    static func product(_ response: TestResponse) throws -> Product {
        try JSONDecoder().decode(Product.self, from: Data(buffer: response.body))
    }

    @Test func aProductComesFromTheCatalogWithATokenThenFromTheCache() async throws {
        try await Upstream.with { upstream in
            let tracer = InMemoryTracer()
            let gateway = try Gateway(
                configuration: Self.configuration(upstream), tracer: tracer, logger: Logger(label: "test"))
            try await gateway.application(logger: Logger(label: "test")).test(.router) { client in
                let first = try await client.execute(uri: "/products/1", method: .get)
                #expect(first.status == .ok)
                #expect(try Self.product(first) == Product(id: 1, name: "Desk lamp", priceCents: 1000))
                #expect(first.headers[.xCache] == "network")
                let second = try await client.execute(uri: "/products/1", method: .get)
                #expect(second.headers[.xCache] == "memory")
                #expect(try Self.product(second).name == "Desk lamp")

                let metrics = try await client.execute(uri: "/metrics", method: .get)
                let text = String(buffer: metrics.body)
                #expect(text.contains("courier_requests"), "Courier's metrics reach the gateway's registry")
                #expect(text.contains("courier_cache_lookups"))
            }
            #expect(await upstream.state.grants == 1)
            #expect(await upstream.state.requests(to: "/v1/products/1") == 1, "the second answer came from the cache")
            // One client span per call to the catalog: the token grant and the product (the
            // cached repeat is a span too, answered from memory).
            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName).sorted() == ["GET", "GET", "POST"], "\(spans.map(\.operationName))")
            let network = spans.first {
                $0.operationName == "GET"
                    && $0.attributes["courier.cache.source"]?.toSpanAttribute() == .string("network")
            }
            #expect(network?.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        }
    }

    @Test func anExpiredTokenIsRefreshedOnceForConcurrentCalls() async throws {
        try await Upstream.with { upstream in
            let gateway = try Gateway(configuration: Self.configuration(upstream), logger: Logger(label: "test"))
            try await gateway.application(logger: Logger(label: "test")).test(.router) { client in
                #expect(try await client.execute(uri: "/products/1", method: .get).status == .ok)
                await upstream.state.revokeAll()
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for id in [2, 3, 2, 3, 2] {
                        group.addTask { try await client.execute(uri: "/products/\(id)", method: .get).status }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: .ok, count: 5))
            }
            #expect(await upstream.state.grants == 2, "one refresh for every call that got 401")
        }
    }

    @Test func catalogErrorsBecomeTheGatewaysOwn() async throws {
        try await Upstream.with { upstream in
            let gateway = try Gateway(configuration: Self.configuration(upstream), logger: Logger(label: "test"))
            try await gateway.application(logger: Logger(label: "test")).test(.router) { client in
                let missing = try await client.execute(uri: "/products/404", method: .get)
                #expect(missing.status == .notFound)
                let broken = try await client.execute(uri: "/products/500", method: .get)
                #expect(broken.status == .badGateway)
                #expect(String(buffer: broken.body).contains("unacceptableStatus"))
                #expect(!String(buffer: broken.body).contains("127.0.0.1"), "the catalog's address stays inside")
                let found = try await client.execute(uri: "/products?q=lamp", method: .get)
                let names = try JSONDecoder().decode([Product].self, from: Data(buffer: found.body)).map(\.name)
                #expect(names == ["Desk lamp", "Lamp shade"])
            }
        }
    }

    /// A catalog that keeps failing gets its circuit opened: the gateway then answers 503 at
    /// once, with `Retry-After`, and the catalog is left alone.
    @Test func aFailingCatalogIsLeftAloneForACoolDown() async throws {
        try await Upstream.with { upstream in
            let gateway = try Gateway(configuration: Self.configuration(upstream), logger: Logger(label: "test"))
            try await gateway.application(logger: Logger(label: "test")).test(.router) { client in
                var statuses: [HTTPResponse.Status] = []
                var refused: TestResponse?
                while refused == nil, statuses.count < 10 {
                    let response = try await client.execute(uri: "/products/503", method: .get)
                    statuses.append(response.status)
                    if response.status == .serviceUnavailable { refused = response }
                }
                // Three calls of three attempts, then a tenth failure opens the circuit.
                #expect(statuses == [.badGateway, .badGateway, .badGateway, .badGateway, .serviceUnavailable])
                #expect(refused.map { String(buffer: $0.body).contains("circuitOpen") } == true)
                let retryAfter = refused?.headers[.retryAfter].flatMap { Int($0) }
                #expect(retryAfter.map { (1...5).contains($0) } == true, "\(String(describing: retryAfter))")
                #expect(try await client.execute(uri: "/products/1", method: .get).status == .serviceUnavailable)
            }
            #expect(await upstream.state.requests(to: "/v1/products/503") == 10)
            #expect(await upstream.state.requests(to: "/v1/products/1") == 0)
        }
    }

    /// A request's deadline bounds its calls to the catalog, and the catalog is told what is
    /// left of it: the gateway's own limit, or the caller's `X-Deadline-Ms` when shorter.
    @Test func aRequestsDeadlineBoundsItsCallsToTheCatalog() async throws {
        try await Upstream.with { upstream in
            let gateway = try Gateway(configuration: Self.configuration(upstream), logger: Logger(label: "test"))
            try await gateway.application(logger: Logger(label: "test")).test(.router) { client in
                #expect(try await client.execute(uri: "/products/1", method: .get).status == .ok)
                // Product 99 takes the catalog a second.
                let started = ContinuousClock.now
                let slow = try await client.execute(
                    uri: "/products/99", method: .get, headers: [.xDeadlineMs: "300"])
                #expect(slow.status == .gatewayTimeout)
                #expect(String(buffer: slow.body).contains("timedOut"))
                #expect(ContinuousClock.now - started < .milliseconds(950))
            }
            let sent = await upstream.state.deadlineFields.map { Int($0) ?? -1 }
            #expect(sent.count == 2)
            if sent.count == 2 {
                #expect((1...5_000).contains(sent[0]), "the gateway's own limit: \(sent)")
                #expect((1...300).contains(sent[1]), "the caller's shorter deadline: \(sent)")
            }
        }
    }

    @Test func theDiskTierServesAfterARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Upstream.with { upstream in
            let configuration = Self.configuration(upstream, cacheDirectory: directory)
            let first = try Gateway(configuration: configuration, logger: Logger(label: "test"))
            try await first.application(logger: Logger(label: "test")).test(.router) { client in
                let response = try await client.execute(uri: "/products/2", method: .get)
                #expect(response.headers[.xCache] == "network")
            }
            let restarted = try Gateway(configuration: configuration, logger: Logger(label: "test"))
            try await restarted.application(logger: Logger(label: "test")).test(.router) { client in
                let response = try await client.execute(uri: "/products/2", method: .get)
                #expect(response.headers[.xCache] == "disk")
                #expect(try Self.product(response).name == "Lamp shade")
            }
            #expect(await upstream.state.requests(to: "/v1/products/2") == 1)
        }
    }

    @Test func gracefulShutdownLetsACallInFlightFinish() async throws {
        try await Upstream.with { upstream in
            let gateway = try Gateway(configuration: Self.configuration(upstream), logger: Logger(label: "test"))
            let group = ServiceGroup(services: [gateway.courier], logger: Logger(label: "test"))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                let slow = Task {
                    try await ProductService(id: 99, catalog: gateway.catalog).load(using: gateway.courier.coordinator)
                }
                // Wait (bounded) until the catalog has the slow call, then shut down gracefully.
                let deadline = ContinuousClock.now + .seconds(30)
                while await upstream.state.requests(to: "/v1/products/99") == 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                await group.triggerGracefulShutdown()
                #expect(try await slow.value.name == "Slow stool", "the call in flight finished")
                try await tasks.next()
                let late = await #expect(throws: ServiceError.self) {
                    try await ProductService(id: 1, catalog: gateway.catalog).load(using: gateway.courier.coordinator)
                }
                #expect(late?.code == .shutDown)
            }
        }
    }
}
