public import HTTPTypes

/// The one error type every public Courier API throws.
///
/// Tell failures apart with ``code``; show people ``recoverySuggestion``. Cancellation is a
/// `ServiceError` too, with code ``Code/cancelled`` and a `CancellationError` underneath.
public struct ServiceError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What went wrong, as a stable, closed-for-matching but open-for-extension value.
    public var code: Code
    /// A short, human explanation of this occurrence (never credentials or bodies).
    public var message: String
    /// The response head, when the server answered.
    public var response: HTTPResponse?
    /// The first bytes of the response body as text, when there was one (at most 512 bytes).
    public var bodyExcerpt: String?
    /// The error that caused this one, if any.
    public var underlying: (any Error)?
    /// The request as a `curl` command, secrets masked: set on the errors of loads, streams and
    /// transfers, and shown by ``debugDescription``.
    public var curlCommand: CurlCommand?
    /// How long until the same request may succeed, when Courier knows: for `circuitOpen` (an
    /// open circuit breaker), the cool-down left before the circuit lets a probe through (zero
    /// while a probe is under way); for `hostPaused`, what is left of the host's pause. A
    /// gateway can pass it on as `Retry-After`.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String = "",
        response: HTTPResponse? = nil,
        bodyExcerpt: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message.isEmpty ? code.description : message
        self.response = response
        self.bodyExcerpt = bodyExcerpt
        self.underlying = underlying
    }

    /// The HTTP status of the response, when the server answered.
    public var status: HTTPResponse.Status? { response?.status }

    /// What a person can do about it.
    public var recoverySuggestion: String {
        guard let retryAfter else { return code.recoverySuggestion }
        guard retryAfter > .zero else { return code.recoverySuggestion + " It may succeed again in a moment." }
        let tenths = retryAfter.components.seconds * 10 + retryAfter.components.attoseconds / 100_000_000_000_000_000
        return code.recoverySuggestion + " It may succeed again in \(tenths / 10).\(tenths % 10) s."
    }

    /// Whether repeating the same request may succeed (timeouts, refused or dropped
    /// connections, DNS failures, and 408/429/502/503/504 responses).
    public var isRetryable: Bool {
        if code.isRetryable { return true }
        if let status = response?.status.code { return [408, 429, 502, 503, 504].contains(status) }
        return false
    }

    public var description: String {
        var text = "ServiceError(\(code)): \(message)"
        if let status = response?.status { text += " [HTTP \(status.code)]" }
        return text
    }

    /// ``description``, the recovery suggestion, the body excerpt, the underlying error and the
    /// request as a `curl` command: what a bug report needs (`String(reflecting: error)`).
    public var debugDescription: String {
        var lines = [description, "Suggestion: \(recoverySuggestion)"]
        if let bodyExcerpt { lines.append("Body: \(bodyExcerpt)") }
        if let underlying { lines.append("Underlying: \(String(reflecting: underlying))") }
        if let curlCommand { lines.append("Request:\n\(curlCommand)") }
        return lines.joined(separator: "\n")
    }

    /// The error for a cancelled task or transfer.
    package static func cancelled(_ message: String = "The request was cancelled.") -> ServiceError {
        ServiceError(.cancelled, message, underlying: CancellationError())
    }

    /// Wraps any error as a `ServiceError`, keeping it if it already is one.
    package static func wrapping(_ error: any Error) -> ServiceError {
        if let error = error as? ServiceError { return error }
        if error is CancellationError { return .cancelled() }
        return ServiceError(.unknown, String(describing: error), underlying: error)
    }
}

/// The underlying error of a `timedOut` that ran out while the request waited for a connection
/// in the transport's own pool: it was never sent, so it says nothing about the server.
package struct TransportWait: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "the request waited for a connection and was not sent" }
}
