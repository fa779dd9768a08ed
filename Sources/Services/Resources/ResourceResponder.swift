public import HTTPTypes

/// Answers resource loads in place of the transport, knowing which resource asked: the hook
/// behind mock mode (see `Fixtures` in `CourierTesting`).
public protocol ResourceResponder: Sendable {
    /// The response for `resource`, whose decorated request is `request`. Throw a
    /// `ServiceError` (such as `mockMissing`) to fail the load as a transport would.
    func response<R: Resource>(for resource: R, request: HTTPRequest) async throws -> TransportResponse
}
