import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// The README's services examples, compiled and run against `MockTransport` (the README's
/// base URL, `https://api.example.com/v1`, is answered by the mock).
@Suite struct ServicesReadmeExamplesTests {
    struct User: Codable, Sendable {
        let id: Int
        let name: String
    }

    struct UserService: Resource {
        typealias Response = User
        let id: Int
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users/\(id)") }
    }

    struct Search: Resource {
        typealias Response = [User]
        let text: String
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/search", query: ["q": text]) }
        var decodingKeyPath: [String] { ["data", "items"] }
    }

    struct CreateUser: Resource {
        typealias Response = User
        let name: String
        var method: HTTPRequest.Method { .post }
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/users") }
        var body: RequestBody? { get throws { try .json(["name": .string(name)]) } }
    }

    struct Tokens: TokenProvider {
        func currentToken() async throws -> String { "token" }
        func refreshToken(replacing rejected: String) async throws -> String { "fresh-token" }
    }

    @Test func theServicesExampleRuns() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/7") { request, _ in
            request.headerFields[.authorization] == "Bearer fresh-token"
                ? .json(#"{"id": 7, "name": "Ada"}"#) : .status(401)
        }
        mock.respond(to: .get, "/v1/search", with: .json(#"{"data": {"items": [{"id": 1, "name": "Ada Lovelace"}]}}"#))
        mock.respond(to: .post, "/v1/users", with: .json(#"{"id": 8, "name": "Grace"}"#, status: 201))

        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [BearerTokenDecorator(tokens: Tokens())]
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        var printed = ""
        try await RequestCoordinator.$current.withValue(coordinator) {
            do {
                let user = try await UserService(id: 7).load()
                let found = try await Search(text: "ada lovelace").load()
                let created = try await CreateUser(name: "Grace").loadResponse()
                printed = "\(user.name) \(found.count) \(created.response.status.code)"
            } catch let error as ServiceError {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(printed == "Ada 1 201")
        #expect(mock.requests.map { $0.request.path ?? "" }.contains("/v1/search?q=ada%20lovelace"))
        #expect(mock.requests.last?.body == Data(#"{"name":"Grace"}"#.utf8))

        // MockTransport on its own
        let plain = MockTransport()
        plain.respond(to: .get, "/v1/users/7", with: .json(#"{"id": 7, "name": "Ada"}"#))
        let user = try await UserService(id: 7).load(using: RequestCoordinator(transport: plain))
        #expect(user.name == "Ada" && plain.requestCount == 1)
    }
}

/// The README's caching example, against `MockTransport` and a temporary disk cache.
@Suite struct CachingReadmeExamplesTests {
    struct Article: Codable, Sendable {
        let id: Int
        let title: String
    }

    struct Feed: Resource {
        typealias Response = [Article]
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/feed") }
        var cachePolicy: CachePolicy { .http() }
    }

    @Test func theCachingExampleRuns() async throws {
        let cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "readme-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: cacheDirectory) }
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/feed") { request, _ in
            if request.headerFields[.ifNoneMatch] == "\"feed-1\"" {
                return .status(304, headers: [.eTag: "\"feed-1\""])
            }
            return .json(#"[{"id": 1, "title": "Hello"}]"#, headers: [.eTag: "\"feed-1\"", .cacheControl: "no-cache"])
        }
        var shown: [Bool] = []
        func show(_ articles: [Article], fromCache: Bool) { shown.append(fromCache) }

        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(
            memory: .init(totalCost: 32 << 20),
            store: try DiskCache(directory: cacheDirectory))
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)

        let feed = try await Feed().loadResponse(using: coordinator)
        #expect(feed.value.count == 1 && feed.source == .network)

        for try await update in Feed().updates(using: coordinator) {
            show(update.value, fromCache: update.source != .network)
        }
        #expect(shown == [true, true])  // memory, then revalidated by a 304
        #expect(mock.requests.last?.request.headerFields[.ifNoneMatch] == "\"feed-1\"")
    }
}

/// The README's backend, lossy and callback examples, against `MockTransport`.
@Suite struct ParityReadmeExamplesTests {
    struct Catalog: Backend {
        func baseURL(in environment: BackendEnvironment) -> String? {
            switch environment {
            case .production: "https://catalog.example.com/v2"
            case .staging: "https://catalog.staging.example.com/v2"
            default: nil
            }
        }
        var headers: HTTPFields { [.accept: "application/json"] }
        var jsonDecoder: any JSONBodyDecoder {
            var decoder = CourierJSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return decoder
        }
        struct Problem: Decodable { let message: String }
        func errorMessage(for response: HTTPResponse, body: Data) -> String? {
            (try? JSONDecoder().decode(Problem.self, from: body))?.message
        }
    }

    struct Product: Codable, Sendable {
        let id: Int
        let unitPrice: Int
    }

    struct ProductService: Resource {
        typealias Response = Product
        let id: Int
        var endpoint: Endpoint { Endpoint(Catalog(), path: "/products/\(id)") }
    }

    struct Products: Resource {
        typealias Response = LossyArray<Product>
        var endpoint: Endpoint { Endpoint(Catalog(), path: "/products") }
    }

    struct Featured: Resource {
        typealias Response = Product?
        var endpoint: Endpoint { Endpoint(Catalog(), path: "/featured") }
        var returnsNilWhenDecodingFails: Bool { true }
    }

    @Test func theParityExamplesRun() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v2/products/7", with: .json(#"{"id": 7, "unit_price": 1200}"#))
        mock.respond(to: .get, "/v2/products/8", with: .json(#"{"message": "No product 8"}"#, status: 404))
        mock.respond(to: .get, "/v2/products", with: .json(#"[{"id": 1, "unit_price": 5}, {"id": "x"}]"#))
        mock.respond(to: .get, "/v2/featured", with: .json(#"{"id": null}"#))

        var configuration = RequestCoordinator.Configuration()
        configuration.environment = .staging
        let staging = RequestCoordinator(transport: mock, configuration: configuration)
        let product = try await ProductService(id: 7).load(using: staging)
        #expect(product.unitPrice == 1200)
        #expect(mock.requests.last?.request.authority == "catalog.staging.example.com")
        #expect(mock.requests.last?.request.headerFields[.accept] == "application/json")
        let error = await #expect(throws: ServiceError.self) { try await ProductService(id: 8).load(using: staging) }
        #expect(error?.message == "HTTP 404: No product 8")

        var shown: [Product] = []
        func show(_ products: [Product]) { shown = products }
        let products = try await Products().load(using: staging)
        show(products.elements)
        _ = products.optionals
        for failure in products.failures { print("skipped product \(failure.index): \(failure.reason)") }
        #expect(shown.map(\.id) == [1] && products.failures.map(\.index) == [1])
        #expect(try await Featured().load(using: staging) == nil)

        let done = Signal()
        let handle = ProductService(id: 7).loading(using: staging)
            .onSuccess { product in print(product.unitPrice) }
            .onFailure { error in print(error.code, error.message) }
            .onCompletion { _ in done.fire() }
        await done.wait()
        handle.cancel()
    }

    struct Order: Codable, Sendable {
        let id: Int
        let placedAt: Date
        let totalCents: Int
    }

    struct RecentOrders: Resource {
        typealias Response = [Order]
        var endpoint: Endpoint { Endpoint("https://shop.example.com", path: "/v1/orders") }
        var decodingKeyPath: [String] { ["data", "orders"] }
        var jsonDecoder: any JSONBodyDecoder {
            var decoder = CourierJSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            return decoder
        }
    }

    struct LegacyOrders: Resource {
        typealias Response = [Order]
        var endpoint: Endpoint { Endpoint("https://shop.example.com", path: "/v1/orders") }
        var decodingKeyPath: [String] { ["data", "orders"] }
        var jsonDecoder: any JSONBodyDecoder {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            return decoder
        }
    }

    @Test func theJSONExampleRuns() async throws {
        let body =
            #"{"data": {"orders": [{"id": 1, "placed_at": "2026-11-22T09:30:00Z", "total_cents": 1250}]}, "meta": {"page": 1}}"#
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/orders", with: .json(body))
        let coordinator = RequestCoordinator(transport: mock)
        let orders = try await RecentOrders().load(using: coordinator)
        let legacy = try await LegacyOrders().load(using: coordinator)
        #expect(orders.map(\.totalCents) == [1250] && legacy.map(\.placedAt) == orders.map(\.placedAt))

        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        let direct = try decoder.decode([Order].self, from: Data(body.utf8), atKeyPath: ["data", "orders"])
        #expect(direct.first?.id == 1)
    }
}
