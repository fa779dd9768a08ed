import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A backend whose environments are two loopback servers.
struct Shop: Backend {
    var urls: [BackendEnvironment: String]
    var extraDecorators: [any RequestDecorator] = []
    func baseURL(in environment: BackendEnvironment) -> String? { urls[environment] }
    var headers: HTTPFields { [.accept: "application/json", HTTPField.Name("X-Client")!: "courier-tests"] }
    var decorators: [any RequestDecorator] { extraDecorators }
    var jsonDecoder: any JSONBodyDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
    struct Problem: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var error: Detail
    }
    func errorMessage(for response: HTTPResponse, body: Data) -> String? {
        (try? JSONDecoder().decode(Problem.self, from: body)).map { "\($0.error.message) (\($0.error.code))" }
    }
}

struct ShopEcho: Resource {
    typealias Response = Echo
    var shop: Shop
    var headers: HTTPFields = [:]
    var decorators: [any RequestDecorator] = []
    var endpoint: Endpoint { Endpoint(shop, path: "/echo", query: ["q": "1"]) }
    func decode(_ body: Data, response: HTTPResponse) throws -> Echo { try Echo(body) }
}

struct ShopProblem: Resource {
    typealias Response = Data
    var shop: Shop
    var endpoint: Endpoint {
        Endpoint(shop, path: "/problem", query: ["status": "422", "message": "SKU must have 8 digits"])
    }
    var retryPolicy: RetryPolicy? { RetryPolicy.none }
}

/// Appends its name to `X-Trail`.
struct Trail: RequestDecorator {
    var name: String
    func decorate(_ request: inout HTTPRequest) async throws {
        let name = HTTPField.Name("X-Trail")!
        request.headerFields[name] = (request.headerFields[name].map { $0 + "," } ?? "") + self.name
    }
}

/// Another backend, side by side with `Shop`.
struct Search: Backend {
    var url: String
    func baseURL(in environment: BackendEnvironment) -> String? { environment == .production ? url : nil }
}

struct Envelope: Resource {
    struct Item: Decodable, Sendable {
        var id: Int
        var name: String
    }
    typealias Response = [Item]
    var search: Search
    var endpoint: Endpoint { Endpoint(search, path: "/envelope", query: ["count": "2"]) }
    var decodingKeyPath: [String] { ["data", "items"] }
}

@Suite("Backends and environments")
struct BackendTests {
    @Test("one resource is served from two environments; switching needs no change to it")
    func environments() async throws {
        let production = try await TestServer.start()
        let staging = try await TestServer.start()
        let shop = Shop(urls: [.production: production.baseURL, .staging: staging.baseURL])
        let transport = CurlTransport()
        let resource = ShopEcho(shop: shop)

        let live = RequestCoordinator(transport: transport)
        _ = try await resource.load(using: live)
        var stagingConfiguration = RequestCoordinator.Configuration()
        stagingConfiguration.environment = .staging
        _ = try await resource.load(
            using: RequestCoordinator(transport: transport, configuration: stagingConfiguration))
        var perBackend = RequestCoordinator.Configuration()
        perBackend.environments[shop.id] = .staging
        _ = try await resource.load(using: RequestCoordinator(transport: transport, configuration: perBackend))
        #expect(production.snapshot.requestCount == 1)
        #expect(staging.snapshot.requestCount == 2)

        var development = RequestCoordinator.Configuration()
        development.environment = .development
        let error = await #expect(throws: ServiceError.self) {
            try await resource.load(using: RequestCoordinator(transport: transport, configuration: development))
        }
        #expect(error?.code == .invalidRequest && error?.message.contains("development") == true)
        await transport.shutdown()
        await production.stop()
        await staging.stop()
    }

    @Test("backend headers and decorators apply: coordinator, then backend, then resource")
    func headersAndDecorators() async throws {
        try await withCoordinator(
            configuration: {
                var configuration = RequestCoordinator.Configuration()
                configuration.decorators = [Trail(name: "coordinator")]
                return configuration
            }()
        ) { server, coordinator in
            let shop = Shop(urls: [.production: server.baseURL], extraDecorators: [Trail(name: "backend")])
            let echo = try await ShopEcho(
                shop: shop, headers: [.accept: "application/vnd.shop+json"], decorators: [Trail(name: "resource")]
            ).load(using: coordinator)
            #expect(echo.header("X-Trail") == "coordinator,backend,resource")
            #expect(echo.header("X-Client") == "courier-tests")
            #expect(echo.header("Accept") == "application/vnd.shop+json")  // the resource's field wins
            #expect(echo.uri == "/echo?q=1")
        }
    }

    @Test("the backend's error envelope becomes the error's message")
    func errorEnvelope() async throws {
        try await withCoordinator { server, coordinator in
            let shop = Shop(urls: [.production: server.baseURL])
            let error = await #expect(throws: ServiceError.self) {
                try await ShopProblem(shop: shop).load(using: coordinator)
            }
            #expect(error?.code == .unacceptableStatus && error?.status?.code == 422)
            #expect(error?.message == "HTTP 422: SKU must have 8 digits (invalid)")
            #expect(error?.bodyExcerpt?.contains("invalid") == true)
        }
    }

    @Test("several backends side by side; a backend's decoder applies to its resources")
    func sideBySide() async throws {
        try await withCoordinator { server, coordinator in
            let items = try await Envelope(search: Search(url: server.baseURL)).load(using: coordinator)
            #expect(items.map(\.name) == ["item-0", "item-1"])
            let echo = try await ShopEcho(shop: Shop(urls: [.production: server.baseURL])).load(using: coordinator)
            #expect(echo.method == "GET")
            struct Snake: Resource {
                struct Body: Decodable, Sendable {
                    var productName: String
                    var unitPrice: Int
                }
                typealias Response = Body
                var shop: Shop
                var endpoint: Endpoint { Endpoint(shop, path: "/snake") }
            }
            let body = try await Snake(shop: Shop(urls: [.production: server.baseURL])).load(using: coordinator)
            #expect(body.productName == "Widget" && body.unitPrice == 12)
        }
    }
}
