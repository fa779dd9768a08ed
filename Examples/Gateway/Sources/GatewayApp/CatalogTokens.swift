public import Courier

/// Bearer tokens for the catalog, from its OAuth token endpoint (client credentials).
///
/// The grant goes through the same coordinator as the catalog's resources, so it gets the
/// coordinator's retries, events, tracing and metrics; it is a resource of its own, outside
/// the catalog's backend, so the bearer decorator never applies to it.
public actor CatalogTokens: TokenProvider {
    private let coordinator: RequestCoordinator
    private let tokenURL: String
    private let clientID: String
    private let clientSecret: String
    private var token: String?

    /// Tokens from `tokenURL`, asked for with HTTP Basic credentials.
    public init(coordinator: RequestCoordinator, tokenURL: String, clientID: String, clientSecret: String) {
        self.coordinator = coordinator
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    public func currentToken() async throws -> String {
        if let token { return token }
        return try await grant()
    }

    public func refreshToken(replacing rejected: String) async throws -> String {
        if let token, token != rejected { return token }  // another caller refreshed already
        return try await grant()
    }

    private func grant() async throws -> String {
        let grant = TokenGrant(
            url: tokenURL, credentials: try BasicAuthDecorator(username: clientID, password: clientSecret))
        let fresh = try await grant.load(using: coordinator).accessToken
        token = fresh
        return fresh
    }
}

/// `POST {tokenURL}` with `grant_type=client_credentials`: `{"access_token": "...", ...}`.
struct TokenGrant: Resource {
    struct Response: Decodable, Sendable { let accessToken: String }
    let url: String
    let credentials: BasicAuthDecorator

    var method: HTTPRequest.Method { .post }
    var endpoint: Endpoint { Endpoint(url) }
    var body: RequestBody? { .form(["grant_type": "client_credentials"]) }
    var decorators: [any RequestDecorator] { [credentials] }
    var jsonDecoder: any JSONBodyDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
