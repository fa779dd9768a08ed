public import FoundationEssentials
public import HTTPTypes

/// A remote resource, declared as a small struct: where it is, how to ask for it, and how to
/// read the answer. Everything but ``endpoint`` has a default.
///
/// ```swift
/// struct UserService: Resource {
///     typealias Response = User          // Decodable: decoded with no code
///     let id: Int
///     var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/users/\(id)") }
/// }
/// let user = try await UserService(id: 7).load()
/// ```
public protocol Resource: Sendable {
    /// What ``decode(_:response:)`` produces.
    associatedtype Response: Sendable

    /// Base URL, path and query.
    var endpoint: Endpoint { get }
    /// The method (default `GET`).
    var method: HTTPRequest.Method { get }
    /// Header fields sent with every request for this resource (default none).
    var headers: HTTPFields { get }
    /// The body (default none). Builders that can fail (`.json`) make this a throwing getter.
    var body: RequestBody? { get throws }
    /// How the cache is used (default `CachePolicy.networkOnly`).
    var cachePolicy: CachePolicy { get }
    /// Statuses that count as success (default `200..<300`); others are `unacceptableStatus`.
    ///
    /// A range of status codes, where every other status is an `HTTPResponse.Status`: that type
    /// is not `Comparable`, so it makes no `Range`, and changing this requirement's type would
    /// silently turn a conformer's `Range<Int>` into an unrelated property.
    var acceptableStatus: Range<Int> { get }
    /// Which responses with a status outside ``acceptableStatus`` the cache may still keep
    /// (default ``CacheableStatus/accepted``: none). A stored one fails again, from the cache.
    var cacheableStatus: CacheableStatus { get }
    /// The total time allowed for each attempt (default: the coordinator's transfer options).
    var timeout: Duration? { get }
    /// The longest time without a byte before an attempt fails with `timedOut` (default: the
    /// coordinator's transfer options, 60 seconds unless configured otherwise).
    var idleTimeout: Duration? { get }
    /// Decorators run after the coordinator's, in order (default none).
    var decorators: [any RequestDecorator] { get }
    /// Whether identical loads in flight share one transfer (default ``Coalescing/automatic``).
    var coalescing: Coalescing { get }
    /// The retry policy, or `nil` for the coordinator's (the default).
    var retryPolicy: RetryPolicy? { get }
    /// Whether a slow first attempt gets a second, hedged one (``Hedging``), or `nil` for the
    /// coordinator's (the default); ``Hedging/never`` opts out of the coordinator's.
    var hedging: Hedging? { get }
    /// Whether waiters of this resource type that share a transfer also share one decoded
    /// value (default `true`). Set `false` when decoding depends on instance properties that
    /// do not change the request.
    var sharesDecodedResponse: Bool { get }

    /// Keys leading to the payload, e.g. `["data", "items"]`: object keys in a JSON response,
    /// element names in an XML one (`CourierXML`), so the envelope around it needs no model of
    /// its own (default: the whole document).
    var decodingKeyPath: [String] { get }
    /// When the response type is optional (`User?`), whether a body that does not decode gives
    /// `nil` instead of a `decodingFailed` error (default `false`).
    var returnsNilWhenDecodingFails: Bool { get }
    /// The decoder for JSON responses (default: the backend's, else a `CourierJSONDecoder`
    /// with default strategies). Foundation's `JSONDecoder` works too.
    var jsonDecoder: any JSONBodyDecoder { get }

    /// Checks a response whose status is acceptable, before decoding (default: accepts all).
    /// A thrown `ServiceError` reaches the caller as is; another error becomes `validationFailed`.
    func validate(_ response: HTTPResponse, body: Data) throws
    /// Turns the body into the response value. `Decodable`, `Data`, `String` and `Void`
    /// responses have a default.
    func decode(_ body: Data, response: HTTPResponse) throws -> Response
}

extension Resource {
    public var method: HTTPRequest.Method { .get }
    public var headers: HTTPFields { [:] }
    public var body: RequestBody? { nil }
    public var cachePolicy: CachePolicy { .networkOnly }
    public var acceptableStatus: Range<Int> { 200..<300 }
    public var cacheableStatus: CacheableStatus { .accepted }
    public var timeout: Duration? { nil }
    public var idleTimeout: Duration? { nil }
    public var decorators: [any RequestDecorator] { [] }
    public var coalescing: Coalescing { .automatic }
    public var retryPolicy: RetryPolicy? { nil }
    public var hedging: Hedging? { nil }
    public var sharesDecodedResponse: Bool { true }
    public var decodingKeyPath: [String] { [] }
    public var returnsNilWhenDecodingFails: Bool { false }
    public var jsonDecoder: any JSONBodyDecoder { endpoint.backend?.jsonDecoder ?? CourierJSONDecoder() }
    public func validate(_ response: HTTPResponse, body: Data) throws {}
}

extension Resource where Response == Void {
    /// Ignores the body.
    public func decode(_ body: Data, response: HTTPResponse) throws {}
}

/// Whether identical loads in flight share one transfer.
public struct Coalescing: Sendable, Hashable {
    enum Mode: Sendable, Hashable { case automatic, always, never, rejectDuplicates }
    let mode: Mode

    /// Safe methods (`GET`, `HEAD`) coalesce; others never do. The default.
    public static let automatic = Coalescing(mode: .automatic)
    /// Identical loads coalesce whatever the method (for idempotent `POST` queries and the like).
    public static let always = Coalescing(mode: .always)
    /// Every load makes its own transfer.
    public static let never = Coalescing(mode: .never)
    /// A load identical to one in flight fails at once with `redundantRequest`.
    public static let rejectDuplicates = Coalescing(mode: .rejectDuplicates)
}
