/// A limit on the loads of one host at once that follows what the host can take (AIMD, the
/// model of TCP's congestion window and of Netflix's concurrency-limits), in place of the fixed
/// ``RequestCoordinator/Configuration/maximumLoadsPerHost``. Opt-in.
///
/// Each host starts at ``initialLimit``, low, so that its first answers come from a host not
/// yet loaded: the fastest plain answers (a 2xx other than 304, over an open connection) make
/// the baseline, over ``latencyWindow`` and the one before (the windows move only with answers
/// to attempts sent with no more than the initial limit in flight, so that a busy host's
/// queueing never raises it). Until the limit is first cut, every answer to an
/// attempt sent while at least half the limit was in flight adds one to it (it doubles per
/// round trip, as TCP's slow start); after, 1/limit (about one more every one or two round
/// trips of a busy host). An attempt that fails as an overloaded host fails (no connection, a
/// timeout, a dropped connection, a 429, 502, 503 or 504), or a plain answer slower than
/// ``latencyTolerance`` times the baseline (and 1 ms more at least), cuts the limit by ``backoff``, once per round trip
/// (the attempts sent before the last cut do not cut it again). Streams and downloads, whose
/// attempts last as long as their bodies, are not counted. The limit stays within
/// ``minimumLimit`` and the coordinator's `maximumLoadsPerHost`. Loads that go straight to the
/// network wait for their turn past it, as with the fixed limit (loads that read the cache
/// first, and a decorator's own loads, never wait).
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
    /// sign of overload (and at least 1 ms more: a loopback's jitter is not overload). 1.5 by
    /// default, as Netflix's gradient limit.
    public var latencyTolerance: Double
    /// The share of the limit kept when it is cut (0.9: a tenth off).
    public var backoff: Double
    /// How long the fastest attempt is remembered as the host's unloaded latency (the
    /// fastest of this window and the one before; a host always busier than the initial limit
    /// keeps its last baseline).
    public var latencyWindow: Duration

    /// An adaptive limit; the defaults: from 4, at least 1, slow past 1.5 times the baseline, a
    /// tenth off per cut, windows of 10 seconds.
    public init(
        initialLimit: Int = 4, minimumLimit: Int = 1, latencyTolerance: Double = 1.5, backoff: Double = 0.9,
        latencyWindow: Duration = .seconds(10)
    ) {
        self.minimumLimit = max(minimumLimit, 1)
        self.initialLimit = max(initialLimit, self.minimumLimit)
        self.latencyTolerance = max(latencyTolerance, 1)
        self.backoff = min(max(backoff, 0.1), 0.99)
        self.latencyWindow = max(latencyWindow, .milliseconds(10))
    }
}
