public import HTTPTypes

/// Changes requests before they are sent, and may look at what came back.
///
/// Decorators run coordinator-wide first, then the backend's, then the resource's, in order,
/// each `await`ed, once per caller before the coalescing and cache keys are taken. One
/// can add headers, rewrite the request, or throw to refuse it: the request is then never
/// sent and the load fails with `decorationFailed` (the thrown error underneath).
///
/// ```swift
/// struct TenantHeader: RequestDecorator {
///     let tenant: String
///     func decorate(_ request: inout HTTPRequest) async throws {
///         request.headerFields[HTTPField.Name("X-Tenant")!] = tenant
///     }
/// }
/// ```
public protocol RequestDecorator: Sendable {
    /// Adds to or rewrites `request`, or throws to refuse it.
    func decorate(_ request: inout HTTPRequest) async throws

    /// Like ``decorate(_:)``, also seeing the request's body (`nil` when it has none). The
    /// coordinator calls this one; the default calls ``decorate(_:)``. Signing decorators
    /// (``SigningDecorator``) implement it to digest the body.
    func decorate(_ request: inout HTTPRequest, body: RequestBody?) async throws
}

extension RequestDecorator {
    public func decorate(_ request: inout HTTPRequest, body: RequestBody?) async throws {
        try await decorate(&request)
    }
}

/// A decorator that looks at the outcome of a decorated request and may ask for one replay
/// (``BearerTokenDecorator`` after refreshing its token). A load is replayed at most once,
/// decorated afresh; throwing here fails the load with `decorationFailed`. Internal: a replay
/// is a second request, so it stays with the decorators Courier ships.
protocol ReplayingDecorator: RequestDecorator {
    func inspect(_ outcome: DecoratedOutcome, of request: HTTPRequest) async throws -> ReplayDecision
}

/// What a decorated request came back with, before validation.
enum DecoratedOutcome: Sendable {
    /// The server answered (any status).
    case response(HTTPResponse)
    /// No response: the transfer failed.
    case failure(ServiceError)

    /// The status, when the server answered.
    var status: HTTPResponse.Status? {
        if case .response(let response) = self { return response.status }
        return nil
    }
}

/// Whether a load proceeds with its outcome or is sent again.
struct ReplayDecision: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable { case proceed, replay }
    private let base: Base

    /// Keep the outcome.
    static let proceed = ReplayDecision(base: .proceed)
    /// Decorate and send the request once more (ignored for a load already replayed).
    static let replay = ReplayDecision(base: .replay)

    var description: String { base.rawValue }

    private init(base: Base) { self.base = base }
}

/// A decorator the coordinator also tells about every response the network gave, replays
/// included, with the number of redirects the transport followed to get it; and whose
/// ``coalescingPartition`` keeps loads of different partitions from sharing a transfer even
/// when their requests are identical (two users without cookies yet must not share one
/// `Set-Cookie`). Internal: the cookie decorator's hook into the pipeline.
protocol ResponseObservingDecorator: RequestDecorator {
    /// Called in the load's task with the response `request` (as sent) got.
    func observe(_ response: HTTPResponse, redirects: Int, of request: HTTPRequest)
    /// Part of the coalescing key of the current task's loads (hashed), or nil.
    var coalescingPartition: String? { get }
}

extension RequestCoordinator.Configuration {
    /// Whether a decorator may replay a load (a token refresh after 401): its body must then be
    /// sendable twice.
    package var replaysLoads: Bool { decorators.contains { $0 is any ReplayingDecorator } }
}
