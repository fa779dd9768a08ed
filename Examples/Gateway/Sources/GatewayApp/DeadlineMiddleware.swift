public import Courier
public import Hummingbird

/// Gives each request to the gateway a deadline, and runs its route inside it: every call to
/// the catalog the route makes ends by then, retries and waits included (Courier's
/// `withDeadline`). The deadline is the gateway's own limit, or sooner when the caller says in
/// `X-Deadline-Ms` how long it will wait; the coordinator passes what is left to the catalog
/// in the same field. A call cut short by it is a 504 (``UpstreamErrorMiddleware``).
public struct DeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The longest any request may take.
    public var limit: Duration

    public init(limit: Duration) { self.limit = limit }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        try await withDeadline(in: Self.budget(of: request.headers, limit: limit)) {
            try await next(request, context)
        }
    }

    /// `limit`, or the caller's `X-Deadline-Ms` when that is shorter (a value that is not a
    /// count of milliseconds is ignored).
    static func budget(of fields: HTTPFields, limit: Duration) -> Duration {
        guard let value = fields[.xDeadlineMs], let milliseconds = Int(value), milliseconds >= 0 else { return limit }
        return min(limit, .milliseconds(milliseconds))
    }
}

extension HTTPField.Name {
    /// How long the caller will wait for the answer, in milliseconds: read from the gateway's
    /// callers, sent to the catalog.
    public static let xDeadlineMs = HTTPField.Name("X-Deadline-Ms")!
}
