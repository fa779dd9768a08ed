/// A limit on the loads of one host at once that follows what the host can take (AIMD, the
/// model of TCP's congestion window and of Netflix's concurrency-limits), in place of the fixed
/// ``RequestCoordinator/Configuration/maximumLoadsPerHost``. Opt-in.
///
/// Each host starts at ``initialLimit``, low, so that the fastest answers it sees are those of
/// a host not yet loaded (the baseline the others are judged by). Until the limit is first
/// cut, every attempt that comes back well, sent while the host had at least half its limit in
/// flight, adds one to it (it doubles per round trip, as TCP's slow start); after, 1/limit
/// (about one more every one or two round trips of a busy host). An attempt that failed as an overloaded host fails (a timeout, a
/// dropped connection, a 502, 503 or 504, a 429) or came back slower than ``latencyTolerance``
/// times the fastest recent one cuts the limit by ``backoff``, once per round trip (the attempts
/// sent before the last cut do not cut it again). The limit stays within ``minimumLimit`` and
/// the coordinator's `maximumLoadsPerHost`. Loads past it wait for their turn, as with the
/// fixed limit.
///
/// ```swift
/// var configuration = RequestCoordinator.Configuration()
/// configuration.adaptiveConcurrency = AdaptiveConcurrency(initialLimit: 8)
/// ```
public struct AdaptiveConcurrency: Sendable, Hashable {
    /// Each host's limit before any attempt came back.
    public var initialLimit: Int
    /// The limit never goes below this.
    public var minimumLimit: Int
    /// How many times the fastest recent attempt an attempt may take before it counts as a
    /// sign of overload (and at least 2 ms more: a loopback's jitter is not overload).
    public var latencyTolerance: Double
    /// The share of the limit kept when it is cut (0.9: a tenth off).
    public var backoff: Double
    /// How long the fastest attempt is remembered as the host's unloaded latency (the
    /// fastest of this window and the one before).
    public var latencyWindow: Duration

    /// An adaptive limit; the defaults: from 4, at least 1, slow past twice the fastest, a
    /// tenth off per cut, the fastest over 10 to 20 seconds.
    public init(
        initialLimit: Int = 4, minimumLimit: Int = 1, latencyTolerance: Double = 2, backoff: Double = 0.9,
        latencyWindow: Duration = .seconds(10)
    ) {
        self.minimumLimit = max(minimumLimit, 1)
        self.initialLimit = max(initialLimit, self.minimumLimit)
        self.latencyTolerance = max(latencyTolerance, 1)
        self.backoff = min(max(backoff, 0.1), 0.99)
        self.latencyWindow = max(latencyWindow, .milliseconds(10))
    }
}
