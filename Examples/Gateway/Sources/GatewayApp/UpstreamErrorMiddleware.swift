import Courier
public import Hummingbird

/// Turns a failed call to the catalog into the answer the gateway's clients should see:
/// the catalog's 404 stays a 404, a slow catalog is a 504, a catalog whose circuit is open (or
/// that asked the fleet for a pause) a 503 with `Retry-After` (when Courier will try it again),
/// anything else a 502. The body names the `ServiceError` code, never the catalog's URL or
/// credentials.
public struct UpstreamErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServiceError {
            var headers = HTTPFields()
            if error.code == .circuitOpen || error.code == .hostPaused, let retryAfter = error.retryAfter {
                // Whole seconds, rounded up: never sooner than the circuit's probe or the pause's end.
                let seconds = retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0)
                headers[.retryAfter] = String(max(seconds, 1))
            }
            throw HTTPError(Self.status(for: error), headers: headers, message: "upstream: \(error.code)")
        }
    }

    static func status(for error: ServiceError) -> HTTPResponse.Status {
        switch error.code {
        case .unacceptableStatus where error.status?.code == 404: .notFound
        case .timedOut: .gatewayTimeout
        case .shutDown, .circuitOpen, .hostPaused: .serviceUnavailable
        default: .badGateway
        }
    }
}
