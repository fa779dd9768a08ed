/// One host's hedging state as a state machine over time given as a `Duration` since any
/// fixed origin: its hedged loads and hedges over the last 10 seconds (``WindowCounts``), and
/// how long those loads took (``LatencyWindow``).
///
/// Settings-free: each load brings its ``Hedging`` (resources may differ), and the machine
/// answers for it. Pure and synchronous: ``HostPolicies`` keeps one per host that hedges,
/// under its lock, and its tests drive it with made-up times.
struct HedgeMachine: Sendable {
    /// How far back loads, hedges and latencies count.
    static let window: Duration = .seconds(10)
    /// Latencies needed before a percentile delay is trusted.
    static let minimumSamples = 20

    /// Hedged loads sent (first) and hedges sent (second).
    private var counts = WindowCounts(window: window)
    private var latencies = LatencyWindow(window: window)

    /// Counts a hedged load's first attempt, sent at `now`, and says when its hedge would go:
    /// nil when it will not (no estimate of the host's latency yet, or hedging is off).
    mutating func loadSent(_ hedging: Hedging, at now: Duration) -> Duration? {
        counts.add(first: 1, at: now)
        guard hedging.isEnabled else { return nil }
        switch hedging.delay {
        case .fixed(let delay):
            return max(delay, .zero)
        case .percentile(let quantile, let minimum):
            // A NaN (a computed quantile gone wrong) reads as the default p95.
            let observed = latencies.quantile(
                quantile.isNaN ? 0.95 : min(max(quantile, 0), 1), at: now, minimumSamples: Self.minimumSamples)
            return observed.map { max($0, minimum) }
        }
    }

    /// Whether a hedge at `now` fits `hedging`'s share of the window's hedged loads.
    mutating func hasRoom(_ hedging: Hedging, at now: Duration) -> Bool {
        let (loads, hedges) = counts.totals(at: now)
        return Double(hedges + 1) <= hedging.maximumShare * Double(loads)
    }

    /// Counts a hedge sent at `now`.
    mutating func hedgeSent(at now: Duration) {
        counts.add(second: 1, at: now)
    }

    /// Counts how long a hedged load took, from its first attempt's sending to the answer that
    /// won, at `now`.
    mutating func answered(after latency: Duration, at now: Duration) {
        latencies.add(latency, at: now)
    }

    /// Whether nothing is counted any more at `now` (the host's entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        counts.totals(at: now) == (0, 0) && latencies.isEmpty(at: now)
    }
}
