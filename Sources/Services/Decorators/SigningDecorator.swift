public import HTTPTypes

/// Signs requests: hands the final request and the SHA-256 digest of its body to a closure
/// that adds signature fields (for example an HMAC in `X-Signature` and an `X-Timestamp`).
///
/// Decorators run in order: the coordinator's, then the backend's, then the resource's. A
/// signer must see the request as it will be sent, so put it **last** (as the last of the
/// resource's decorators, or the last of the coordinator's when no backend or resource adds
/// any). It runs for each caller before the coalescing and cache keys are taken, and again
/// when a decorator asks for a replay. Header fields added after it (conditional
/// revalidation fields from the cache) are not signed.
///
/// ```swift
/// let signer = SigningDecorator { request, digest in
///     let timestamp = String(Int(Date().timeIntervalSince1970))
///     let text = "\(request.method.rawValue)\n\(request.path ?? "/")\n\(timestamp)\n\(digest.hex)"
///     request.headerFields[HTTPField.Name("X-Timestamp")!] = timestamp
///     request.headerFields[HTTPField.Name("X-Signature")!] = myHMAC(secret, text)
/// }
/// ```
///
/// The body digest is computed from the body's bytes, reading files in chunks; a file that
/// cannot be read fails the load with `decorationFailed` (`fileAccess` underneath).
public struct SigningDecorator: RequestDecorator, CustomStringConvertible {
    /// Adds the signature to the request, given the digest of its body.
    public typealias Signer = @Sendable (_ request: inout HTTPRequest, _ body: RequestBodyDigest) async throws -> Void

    private let sign: Signer

    /// Creates a decorator that calls `sign` with each request and its body's digest.
    public init(_ sign: @escaping Signer) {
        self.sign = sign
    }

    /// Signs a request without a body (its digest is ``RequestBodyDigest/empty``).
    public func decorate(_ request: inout HTTPRequest) async throws {
        try await sign(&request, .empty)
    }

    public func decorate(_ request: inout HTTPRequest, body: RequestBody?) async throws {
        try await sign(&request, RequestBodyDigest(of: body))
    }

    public var description: String { "SigningDecorator" }
}
