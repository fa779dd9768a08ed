public import Courier
public import Foundation

/// The upstream catalog service: where it runs in each environment, and what it answers.
///
/// Its decorators put a bearer token on every request, refreshed once for a storm of 401s;
/// resources of other backends (the token grant itself) never see them.
public struct Catalog: Backend {
    /// The catalog's URL in `.development`: a local copy, or the tests' loopback server.
    public var developmentURL: String
    /// One decorator for every resource of the catalog, so that they share one token and one
    /// refresh.
    private let authorization: BearerTokenDecorator

    public init(developmentURL: String, tokens: CatalogTokens) {
        self.developmentURL = developmentURL
        self.authorization = BearerTokenDecorator(tokens: tokens)
    }

    public func baseURL(in environment: BackendEnvironment) -> String? {
        switch environment {
        case .production: "https://catalog.internal.example.com/v1"
        case .staging: "https://catalog.staging.internal.example.com/v1"
        case .development: developmentURL
        default: nil
        }
    }

    public var headers: HTTPFields { [.accept: "application/json"] }

    public var decorators: [any RequestDecorator] { [authorization] }

    /// The catalog explains its errors as `{"error": "..."}`.
    public func errorMessage(for response: HTTPResponse, body: Data) -> String? {
        struct Problem: Decodable { let error: String }
        return try? CourierJSONDecoder().decode(Problem.self, from: body).error
    }
}

/// A product as the catalog describes it, and as the gateway returns it.
public struct Product: Codable, Sendable, Equatable {
    public var id: Int
    public var name: String
    public var priceCents: Int

    public init(id: Int, name: String, priceCents: Int) {
        self.id = id
        self.name = name
        self.priceCents = priceCents
    }
}

/// One product. The catalog sends `Cache-Control` and an `ETag`, so the gateway's cache serves
/// repeats and revalidates with `If-None-Match` once they are stale.
public struct ProductService: Resource {
    public typealias Response = Product
    public let id: Int
    public let catalog: Catalog

    public init(id: Int, catalog: Catalog) {
        self.id = id
        self.catalog = catalog
    }

    public var endpoint: Endpoint { Endpoint(catalog, path: "/products/\(id)") }
    public var cachePolicy: CachePolicy { .http() }
    public var jsonDecoder: any JSONBodyDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}

/// Products whose name contains a text, from the catalog's search (`{"items": [...]}`).
public struct ProductSearch: Resource {
    public typealias Response = [Product]
    public let text: String
    public let catalog: Catalog

    public init(text: String, catalog: Catalog) {
        self.text = text
        self.catalog = catalog
    }

    public var endpoint: Endpoint { Endpoint(catalog, path: "/products", query: ["q": text]) }
    public var decodingKeyPath: [String] { ["items"] }
    public var jsonDecoder: any JSONBodyDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
