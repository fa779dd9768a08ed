extension ServiceError {
    /// A kind of failure. Compare with `==` against the static members; `description` is
    /// stable and free of associated values, so it can label metrics.
    ///
    /// New codes may be added in any release, which is why this is a struct and not an enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let description: String
        /// What a person can do about it.
        public let recoverySuggestion: String
        package let isRetryable: Bool

        /// Modules of this package add their own codes (services, caching, testing).
        package init(_ description: String, retryable: Bool = false, suggestion: String) {
            self.description = description
            self.isRetryable = retryable
            self.recoverySuggestion = suggestion
        }

        public static func == (lhs: Code, rhs: Code) -> Bool { lhs.description == rhs.description }
        public func hash(into hasher: inout Hasher) { hasher.combine(description) }

        /// The request is malformed (e.g. a header with CR, LF or NUL, a bad URL).
        public static let invalidRequest = Code(
            "invalidRequest", suggestion: "Fix the request: check its URL and header names and values.")
        /// A timeout elapsed (connect, total or low-speed).
        public static let timedOut = Code(
            "timedOut", retryable: true,
            suggestion: "Try again later, or raise the timeout if the server is known to be slow.")
        /// No connection could be made to the server.
        public static let cannotConnect = Code(
            "cannotConnect", retryable: true,
            suggestion: "Check that the server is running and reachable, then try again.")
        /// The host name could not be resolved.
        public static let dnsFailed = Code(
            "dnsFailed", retryable: true, suggestion: "Check the host name and the network's DNS settings.")
        /// The TLS handshake failed or the certificate was not trusted.
        public static let tlsFailed = Code(
            "tlsFailed",
            suggestion: "Check the server's certificate, or configure the certificate authority that signed it.")
        /// The server's public key did not match the configured pin.
        public static let pinningFailed = Code(
            "pinningFailed",
            suggestion: "The server presented an unexpected key: update the pin only if the key rotated on purpose.")
        /// The connection closed before a complete response head arrived.
        public static let connectionClosed = Code(
            "connectionClosed", retryable: true,
            suggestion: "The server or a proxy dropped the connection; try again.")
        /// The body ended before the length the server announced.
        public static let truncatedBody = Code(
            "truncatedBody", suggestion: "The response was cut short; try again, and check the server's logs.")
        /// The response violates HTTP (conflicting lengths, duplicate `Location`, bad bytes in headers).
        public static let malformedResponse = Code(
            "malformedResponse", suggestion: "The server sent an invalid HTTP response; report it to its operators.")
        /// The response header block exceeded the configured limit.
        public static let headersTooLarge = Code(
            "headersTooLarge", suggestion: "Raise the header size limit only if the server is trusted.")
        /// A compressed body was corrupt or ended before its stream did.
        public static let decompressionFailed = Code(
            "decompressionFailed", suggestion: "The compressed body is corrupt or incomplete; try again.")
        /// The server stacked more content codings than Courier decodes (5). A body in a coding
        /// Courier does not know is not an error: it is handed on as it came.
        public static let unsupportedEncoding = Code(
            "unsupportedEncoding",
            suggestion: "The server stacked more content codings than Courier decodes; report it to its operators.")
        /// The body (on the wire or decoded) exceeded the configured limit.
        public static let responseTooLarge = Code(
            "responseTooLarge", suggestion: "Raise the size limit, or download the body to a file instead.")
        /// More redirects than the policy allows, or a redirect loop.
        public static let tooManyRedirects = Code(
            "tooManyRedirects", suggestion: "The server redirects in a loop or too often; check the URL.")
        /// A redirect the policy forbids (to another scheme, or from https to http).
        public static let redirectRefused = Code(
            "redirectRefused",
            suggestion: "The server redirected somewhere unsafe; use the final URL directly if trusted.")
        /// A local file for an upload or download could not be read or written.
        public static let fileAccess = Code(
            "fileAccess", suggestion: "Check that the file exists and that the process may read or write it.")
        /// A streamed request body failed: its sequence threw (the underlying error), or it
        /// ended with more or fewer bytes than the length it declared.
        public static let requestBodyFailed = Code(
            "requestBodyFailed",
            suggestion: "Check the sequence that produces the request body; the request was not completed.")
        /// The request had to be sent again (a redirect that keeps the body) but its body is a
        /// stream, which is read once.
        public static let bodyNotReplayable = Code(
            "bodyNotReplayable",
            suggestion: "Send the body as bytes or a file where the request may be redirected or retried.")
        /// Another network failure.
        public static let networkFailed = Code(
            "networkFailed", retryable: true, suggestion: "Check the network connection and try again.")
        /// The request or task was cancelled.
        public static let cancelled = Code("cancelled", suggestion: "Nothing to do: the caller cancelled the request.")
        /// The transport was shut down before or while the request ran.
        public static let shutDown = Code(
            "shutDown", suggestion: "Create a new transport, or send requests before shutting it down.")
        /// An error not otherwise classified.
        public static let unknown = Code("unknown", suggestion: "See the underlying error for details.")
    }
}
