/// When a load sends a second, hedged attempt at a slow first one: the first answer wins, the
/// other attempt is cancelled (the model of gRPC's and Finagle's hedged requests).
///
/// One slow replica behind a host sets the tail latency of every caller; a hedge sent once
/// the first attempt is slower than most of the host's recent answers takes the tail's loads
/// to another replica, for a few extra requests. Only idempotent loads hedge (`GET`, `HEAD`,
/// `OPTIONS`, `TRACE`, `PUT`, `DELETE`) whose body can be sent twice, and only their first
/// attempt: streamed loads, downloads and loads a responder answers never do. A hedge is an
/// extra request: it must fit both the hedge share (``maximumShare``) and the host's
/// ``RetryBudget``, and an open circuit refuses it.
///
/// Opt in per coordinator, or per resource:
///
/// ```swift
/// var configuration = RequestCoordinator.Configuration()
/// configuration.hedging = .default  // after the host's p95, at most 5% extra requests
///
/// struct Quote: Resource {
///     typealias Response = Data
///     var endpoint: Endpoint { Endpoint("https://quotes.example.com", path: "/latest") }
///     var hedging: Hedging? { Hedging(delay: .fixed(.milliseconds(50))) }
/// }
/// ```
public struct Hedging: Sendable, Hashable {
    /// How long the first attempt may take before the hedge goes.
    public enum Delay: Sendable, Hashable {
        /// This long after the first attempt was sent.
        case fixed(Duration)
        /// The host's observed latency at `quantile` (0.95: its p95), no less than `minimum`:
        /// the time from the first attempt's sending to the answer that won, over the host's
        /// hedged loads of the last 5 to 10 seconds (two generations of 5 s), to within a
        /// fifth. Until 20 such loads came back in that window, loads to the host do not hedge.
        case percentile(Double, minimum: Duration)
    }

    /// When the hedge goes (default: the host's p95, no less than 1 ms).
    public var delay: Delay
    /// Hedges allowed per hedged load sent to the host over the last 10 seconds (default 0.05:
    /// at most 5% extra requests). A hedge past it is not sent; the first attempt goes on.
    public var maximumShare: Double
    /// Whether loads hedge at all (``never`` does not).
    let isEnabled: Bool

    /// Hedging after `delay`, within `maximumShare` extra requests.
    public init(delay: Delay = .percentile(0.95, minimum: .milliseconds(1)), maximumShare: Double = 0.05) {
        self.delay = delay
        self.maximumShare = max(maximumShare, 0)
        isEnabled = true
    }

    private init(disabled: Void) {
        delay = .fixed(.zero)
        maximumShare = 0
        isEnabled = false
    }

    /// After the host's p95, at most 5% extra requests.
    public static let `default` = Hedging()
    /// No hedging: a resource's way out of its coordinator's ``RequestCoordinator/Configuration/hedging``.
    public static let never = Hedging(disabled: ())
}
