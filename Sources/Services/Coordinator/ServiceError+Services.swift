extension ServiceError.Code {
    /// A load identical to one in flight was refused because its resource asked for
    /// ``Coalescing/rejectDuplicates``.
    public static let redundantRequest = ServiceError.Code(
        "redundantRequest",
        suggestion: "An identical request is already in flight; wait for it, or let identical loads coalesce.")
    /// A decorator refused the request or failed (for example a token could not be obtained);
    /// the request was not sent. The decorator's error is the `underlying` error.
    public static let decorationFailed = ServiceError.Code(
        "decorationFailed",
        suggestion: "A request decorator refused the request; see the underlying error (often credentials).")
    /// The server answered with a status the resource does not accept.
    public static let unacceptableStatus = ServiceError.Code(
        "unacceptableStatus",
        suggestion: "The server refused the request; see the status and body excerpt for its reason.")
    /// The body could not be decoded into the response type; the message names the coding path.
    public static let decodingFailed = ServiceError.Code(
        "decodingFailed",
        suggestion: "The response does not match the model: compare the coding path with the server's payload.")
    /// The resource's own validation rejected the response.
    public static let validationFailed = ServiceError.Code(
        "validationFailed", suggestion: "The response failed the resource's validation; see the underlying error.")
    /// A `CachePolicy.cacheOnly(tiers:)` load found nothing stored (or no cache is configured).
    public static let cacheMiss = ServiceError.Code(
        "cacheMiss", suggestion: "Nothing is cached for this resource yet; load it from the network first.")
    /// The host's circuit is open (``CircuitBreaker``): its recent attempts failed, so the load
    /// was not sent. `ServiceError.retryAfter` says when the circuit lets a probe through.
    public static let circuitOpen = ServiceError.Code(
        "circuitOpen",
        suggestion: "The host failed repeatedly, so Courier stopped sending to it for a while; try again later.")
    /// The host asked to be left alone for a while (`429` or `503` with `Retry-After`, to this
    /// process or, through a fleet tier that keeps host pauses, to another of its fleet), so
    /// the load was not sent. `ServiceError.retryAfter` says when the pause ends.
    public static let hostPaused = ServiceError.Code(
        "hostPaused",
        suggestion:
            "The host asked for a pause (Retry-After), so Courier is not sending to it until then; try again later.")
    /// A request body could not be encoded (for example a non-finite number in JSON).
    public static let encodingFailed = ServiceError.Code(
        "encodingFailed", suggestion: "The request body could not be encoded; check the values it contains.")
}

extension ServiceError {
    /// What a load gets when `host`'s circuit is open for `retryAfter` more (nil: until the
    /// probes under way come back).
    static func circuitOpen(_ host: String, retryAfter: Duration?) -> ServiceError {
        var error = ServiceError(
            .circuitOpen, "The circuit for \(host) is open after repeated failures; the request was not sent.")
        error.retryAfter = retryAfter ?? .zero
        return error
    }

    /// What a load whose request says `only-if-cached` gets when nothing stored answers it:
    /// `cacheMiss`, with the status an HTTP cache answers (504 Gateway Timeout, RFC 9111
    /// section 5.2.1.7) for a caller that wants the HTTP form.
    static func onlyIfCachedMiss(_ message: String) -> ServiceError {
        ServiceError(.cacheMiss, message, response: HTTPResponse(status: .gatewayTimeout))
    }

    /// What a load gets when `host` is paused for `retryAfter` more.
    static func hostPaused(_ host: String, retryAfter: Duration) -> ServiceError {
        var error = ServiceError(
            .hostPaused, "\(host) asked for a pause (Retry-After) that has not ended; the request was not sent.")
        error.retryAfter = retryAfter
        return error
    }

    /// What a load gets when the coordinator shut down before it started.
    static var coordinatorShutDown: ServiceError { ServiceError(.shutDown, "The coordinator was shut down.") }

    /// An `unacceptableStatus` error carrying the head and the first bytes of the body.
    static func unacceptable(_ response: TransportResponse, expected: Range<Int>) -> ServiceError {
        ServiceError(
            .unacceptableStatus,
            "HTTP \(response.head.status.code) is outside \(expected.lowerBound)..<\(expected.upperBound).",
            response: response.head, bodyExcerpt: excerpt(of: response))
    }

    /// At most 512 bytes of the body as text, for error reports.
    static func excerpt(of response: TransportResponse) -> String? {
        guard !response.body.isEmpty else { return nil }
        return String(decoding: response.body.prefix(512), as: UTF8.self)
    }
}
