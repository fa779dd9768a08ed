internal import CourierCore

/// When a coordinator stops sending to a host that keeps failing, and how it tries again (the
/// circuit breaker of Hystrix, Finagle's failure accrual and Envoy's outlier detection).
///
/// A host's circuit **opens** after ``consecutiveFailures`` failed attempts in a row, or when
/// at least ``failureRate`` of the attempts of the last ``window`` failed (once there were
/// ``minimumAttempts``). While it is open, loads to the host fail at once with
/// `circuitOpen`, whose `retryAfter` says when the circuit
/// lets a probe through. After ``coolDown`` it is **half-open**: ``probes`` attempts go through;
/// when they all succeed it **closes**, when one fails it opens again for twice the last
/// cool-down (at most ``maximumCoolDown``).
///
/// A failure is what says the host itself is unwell: no connection, a timeout, a connection
/// dropped before its answer, or a 502, 503 or 504. Any other answer (a 404, a 500 from one
/// broken route) is a success: the host answers. Cancelled attempts count for nothing, nor do
/// timeouts the load brought on itself (its deadline, a wait for a connection in the local
/// pool).
///
/// A circuit is per host (scheme and authority), not per route: a 502, 503 or 504 from one
/// route behind a shared proxy counts against every route of that host. Turn circuits off
/// (`circuitBreaker = nil`) for a host whose routes fail apart, or give it a coordinator of its
/// own with a breaker that suits it.
///
/// ```swift
/// var configuration = RequestCoordinator.Configuration()
/// configuration.circuitBreaker = CircuitBreaker(consecutiveFailures: 10, coolDown: .seconds(2))
/// ```
public struct CircuitBreaker: Sendable, Hashable {
    /// Failed attempts in a row that open the circuit.
    public var consecutiveFailures: Int
    /// The share of failed attempts over ``window`` that opens the circuit (0.5: half).
    public var failureRate: Double
    /// Attempts over ``window`` before ``failureRate`` is judged.
    public var minimumAttempts: Int
    /// How far back attempts count for ``failureRate``.
    public var window: Duration
    /// How long the circuit stays open before its first probe.
    public var coolDown: Duration
    /// The longest cool-down, however many probes failed.
    public var maximumCoolDown: Duration
    /// Attempts let through at once while half-open; that many successes close the circuit.
    public var probes: Int

    /// A circuit breaker; the defaults are those of ``default``.
    public init(
        consecutiveFailures: Int = 10, failureRate: Double = 0.5, minimumAttempts: Int = 20,
        window: Duration = .seconds(10), coolDown: Duration = .seconds(5), maximumCoolDown: Duration = .seconds(60),
        probes: Int = 1
    ) {
        self.consecutiveFailures = max(consecutiveFailures, 1)
        self.failureRate = min(max(failureRate, 0.01), 1)
        self.minimumAttempts = max(minimumAttempts, 1)
        self.window = max(window, .milliseconds(10))
        self.coolDown = max(coolDown, .milliseconds(1))
        self.maximumCoolDown = max(maximumCoolDown, self.coolDown)
        self.probes = max(probes, 1)
    }

    /// Opens after 10 failures in a row, or half the attempts of 10 seconds (20 at least);
    /// probes once after 5 seconds, then, while probes fail, after 10, 20, 40 and 60.
    ///
    /// Why 10 in a row and not fewer: against a busy host that fails one attempt in seven
    /// (the soak's fault server), runs of 5 failures come every 20,000 attempts or so, and each
    /// would refuse every load for the cool-down; runs of 10 come once in 300 million. A host
    /// that is down reaches 10 within four loads of three attempts.
    public static let `default` = CircuitBreaker()

    /// Whether an attempt that ended with `status` or `error` says the host is unwell; nil when
    /// it says nothing either way (cancelled, refused before it was sent, or bad locally).
    static func isFailure(status: Int?, error: ServiceError?) -> Bool? {
        if let status { return status == 502 || status == 503 || status == 504 }
        guard let error else { return false }
        switch error.code {
        case .cannotConnect, .timedOut, .connectionClosed, .networkFailed, .dnsFailed, .tlsFailed: return true
        case .cancelled, .shutDown, .invalidRequest, .bodyNotReplayable, .requestBodyFailed, .fileAccess,
            .circuitOpen, .hostPaused:
            return nil
        default: return false
        }
    }
}
