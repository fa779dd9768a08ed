public import FoundationEssentials
public import HTTPTypes

/// What every resource of one backend shares, declared once: its base URL in each environment,
/// default header fields, decorators, validation and decoding rules, and how its errors read.
///
/// ```swift
/// struct Catalog: Backend {
///     func baseURL(in environment: BackendEnvironment) -> String? {
///         switch environment {
///         case .production: "https://catalog.example.com/v2"
///         case .staging: "https://catalog.staging.example.com/v2"
///         default: "http://127.0.0.1:8080/v2"
///         }
///     }
///     var headers: HTTPFields { [.accept: "application/json"] }
///     func errorMessage(for response: HTTPResponse, body: Data) -> String? {
///         (try? JSONDecoder().decode(Problem.self, from: body))?.message
///     }
/// }
///
/// struct Product: Resource {
///     typealias Response = ProductModel
///     let id: Int
///     var endpoint: Endpoint { Endpoint(Catalog(), path: "/products/\(id)") }
/// }
/// ```
///
/// A coordinator picks the environment (``RequestCoordinator/Configuration/environment``, or
/// per backend in ``RequestCoordinator/Configuration/environments``), so switching one needs
/// no change to any resource. Decorators run coordinator-wide, then the backend's, then the
/// resource's. Everything but ``baseURL(in:)`` has a default.
public protocol Backend: Sendable {
    /// Names the backend in ``RequestCoordinator/Configuration/environments`` (default: the
    /// type's name).
    var id: String { get }
    /// The base URL in `environment`, or nil when the backend has none there (loads then fail
    /// with `invalidRequest`).
    func baseURL(in environment: BackendEnvironment) -> String?
    /// Header fields for every request (a resource's fields of the same name win).
    var headers: HTTPFields { get }
    /// Decorators run after the coordinator's and before the resource's.
    var decorators: [any RequestDecorator] { get }
    /// The JSON decoder its resources use unless they name their own (default: a
    /// `CourierJSONDecoder` with default strategies).
    var jsonDecoder: any JSONBodyDecoder { get }
    /// Checks every response with an acceptable status, before the resource's own validation
    /// (for example an API that answers 200 with an error object).
    func validate(_ response: HTTPResponse, body: Data) throws
    /// The server's own explanation in a response with an unacceptable status (the message in
    /// its error envelope), used as the `unacceptableStatus` error's message; nil when none.
    func errorMessage(for response: HTTPResponse, body: Data) -> String?
}

extension Backend {
    public var id: String { String(describing: Self.self) }
    public var headers: HTTPFields { [:] }
    public var decorators: [any RequestDecorator] { [] }
    public var jsonDecoder: any JSONBodyDecoder { CourierJSONDecoder() }
    public func validate(_ response: HTTPResponse, body: Data) throws {}
    public func errorMessage(for response: HTTPResponse, body: Data) -> String? { nil }
}

/// A deployment a backend can be reached in. Any name works; three are predefined.
public struct BackendEnvironment: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The environment's name.
    public var name: String

    /// An environment called `name`.
    public init(_ name: String) { self.name = name }
    public init(stringLiteral name: String) { self.name = name }

    /// Local and development servers.
    public static let development = BackendEnvironment("development")
    /// The pre-production copy.
    public static let staging = BackendEnvironment("staging")
    /// The real thing (the default).
    public static let production = BackendEnvironment("production")

    public var description: String { name }
}
