internal import FoundationEssentials
internal import HTTPTypes

/// When and how long to wait before repeating a failed request.
///
/// By default a request is retried (up to 3 attempts in all) after a connection failure before
/// any response byte, a timeout, or a 408/429/502/503/504 response — only when its method is
/// idempotent or it carries an `Idempotency-Key`. Other statuses, decoding errors and
/// cancellation are never retried. The delay grows exponentially with jitter; a `Retry-After`
/// header (seconds or an HTTP date) replaces it.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (1 disables retries).
    public var maximumAttempts: Int
    /// The delay before the first retry.
    public var initialDelay: Duration
    /// How much each delay grows over the previous one.
    public var multiplier: Double
    /// The longest computed delay.
    public var maximumDelay: Duration
    /// The fraction of each delay that is randomized (0 = none, 1 = anywhere in 0...delay).
    public var jitter: Double
    /// Response statuses that are retried.
    public var retryableStatuses: Set<HTTPResponse.Status>
    /// Whether a `Retry-After` header sets the delay.
    public var honorsRetryAfter: Bool
    /// A `Retry-After` longer than this ends the retries (the response is returned as is).
    public var maximumRetryAfter: Duration
    /// Whether non-idempotent requests without an `Idempotency-Key` are retried too.
    public var retriesNonIdempotentRequests: Bool

    /// Creates a policy; the defaults are those of ``default``.
    public init(
        maximumAttempts: Int = 3, initialDelay: Duration = .milliseconds(200), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5,
        retryableStatuses: Set<HTTPResponse.Status> = [408, 429, 502, 503, 504], honorsRetryAfter: Bool = true,
        maximumRetryAfter: Duration = .seconds(120), retriesNonIdempotentRequests: Bool = false
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.multiplier = max(1, multiplier)
        self.maximumDelay = maximumDelay
        self.jitter = min(max(jitter, 0), 1)
        self.retryableStatuses = retryableStatuses
        self.honorsRetryAfter = honorsRetryAfter
        self.maximumRetryAfter = maximumRetryAfter
        self.retriesNonIdempotentRequests = retriesNonIdempotentRequests
    }

    /// Creates a policy from status codes.
    @available(*, deprecated, message: "Pass the statuses as HTTPResponse.Status (integer literals still work).")
    @_disfavoredOverload
    public init(
        maximumAttempts: Int = 3, initialDelay: Duration = .milliseconds(200), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5, retryableStatuses: Set<Int>,
        honorsRetryAfter: Bool = true, maximumRetryAfter: Duration = .seconds(120),
        retriesNonIdempotentRequests: Bool = false
    ) {
        self.init(
            maximumAttempts: maximumAttempts, initialDelay: initialDelay, multiplier: multiplier,
            maximumDelay: maximumDelay, jitter: jitter,
            retryableStatuses: Set(retryableStatuses.map { HTTPResponse.Status(code: $0) }),
            honorsRetryAfter: honorsRetryAfter, maximumRetryAfter: maximumRetryAfter,
            retriesNonIdempotentRequests: retriesNonIdempotentRequests)
    }

    /// Three attempts, 200 ms then 400 ms (each with up to 50% jitter), `Retry-After` honoured.
    public static let `default` = RetryPolicy()
    /// No retries.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// The delay before attempt `attempt + 1`, or `nil` when `outcome` must not be retried.
    /// With `resumesCutBodies` (a download, which resumes or restarts safely), a body cut short
    /// (`truncatedBody`) is retried too. `now` dates an HTTP-date `Retry-After`; `random` is a
    /// value in `0..<1`. Neither is evaluated unless the outcome is retried (reading the clock
    /// and the system's random source on every successful load costs a syscall).
    func delay(
        after outcome: Result<TransportResponse, ServiceError>, of request: HTTPRequest, attempt: Int,
        resumesCutBodies: Bool = false, now: @autoclosure () -> Date, random: @autoclosure () -> Double
    ) -> Duration? {
        guard attempt < maximumAttempts else { return nil }
        guard retriesNonIdempotentRequests || Self.isIdempotent(request) else { return nil }
        switch outcome {
        case .failure(let error):
            guard error.code != .cancelled,
                error.code.isRetryableBeforeResponse || (resumesCutBodies && error.code == .truncatedBody)
            else { return nil }
            return backoff(attempt: attempt, random: random())
        case .success(let response):
            guard retryableStatuses.contains(response.head.status) else { return nil }
            if honorsRetryAfter, let value = response.head.headerFields[.retryAfter] {
                guard let wait = Self.retryAfter(value, now: now()) else {
                    return backoff(attempt: attempt, random: random())
                }
                return wait <= maximumRetryAfter ? wait : nil
            }
            return backoff(attempt: attempt, random: random())
        }
    }

    /// `initialDelay * multiplier^(attempt-1)`, capped, minus up to `jitter` of it.
    func backoff(attempt: Int, random: Double) -> Duration {
        var factor = 1.0
        for _ in 1..<max(attempt, 1) { factor *= multiplier }
        let capped = min(initialDelay * factor, maximumDelay)
        return capped * (1 - jitter * random)
    }

    /// A `Retry-After` value as a wait: delta-seconds, or an HTTP date relative to `now`
    /// (a date in the past is no wait). `nil` when the value is neither.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = String(
            value.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" })
                .reversed())
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        let interval = date.timeIntervalSince(now)
        return interval > 0 ? .milliseconds(Int64((interval * 1000).rounded(.up))) : .zero
    }

    /// Safe methods, `PUT` and `DELETE`, or any request carrying an `Idempotency-Key`.
    /// Whether this policy may send `request` more than once (``CourierOpenAPI`` streams a large
    /// request body instead of spooling it when neither it nor a decorator may).
    package func mayRetry(_ request: HTTPRequest) -> Bool {
        maximumAttempts > 1 && (retriesNonIdempotentRequests || Self.isIdempotent(request))
    }

    static func isIdempotent(_ request: HTTPRequest) -> Bool {
        switch request.method {
        case .get, .head, .options, .trace, .put, .delete: return true
        default: return request.headerFields[idempotencyKey] != nil
        }
    }

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

extension ServiceError.Code {
    /// Failures where the request cannot have been processed or no answer arrived.
    var isRetryableBeforeResponse: Bool {
        self == .cannotConnect || self == .dnsFailed || self == .connectionClosed || self == .timedOut
            || self == .networkFailed
    }
}
