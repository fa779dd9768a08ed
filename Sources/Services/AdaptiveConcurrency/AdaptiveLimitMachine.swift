/// One host's adaptive limit (``AdaptiveConcurrency``) as a state machine over time given as a
/// `Duration` since any fixed origin: attempts sent and come back, and the limit they move.
///
/// Pure and synchronous: ``HostPolicies`` keeps one per host under its lock and hands a changed
/// limit to ``HostQueue``; its tests drive it with made-up times.
struct AdaptiveLimitMachine: Sendable {
    let settings: AdaptiveConcurrency
    /// The most the limit may reach (the coordinator's `maximumLoadsPerHost`).
    let ceiling: Int
    /// The limit, with its fraction (additive increase adds 1/limit per good attempt).
    private(set) var limit: Double
    /// The whole limit it starts from.
    let initialLimit: Int
    /// Attempts sent and not yet come back.
    private(set) var inFlight = 0
    /// When the limit was last cut: attempts sent before then do not cut it again.
    private var lastCut: Duration?
    /// Until the first cut, each good attempt adds a whole one (the limit doubles per round
    /// trip, as TCP's slow start), so that a low start reaches a fast host's limit quickly;
    /// after, 1/limit.
    private(set) var slowStart = true
    /// The fastest attempt of the current window and of the one before, and when the current
    /// one began.
    private var fastest: Duration?
    private var fastestBefore: Duration?
    private var windowStart: Duration?

    /// How an attempt came back.
    enum Sample: Sendable {
        /// An answer whose time says how loaded the host is: a 2xx other than 304, over a
        /// connection already open, without a redirect.
        case timed
        /// Another answer (a 304, a 404, a new connection's handshake, a redirect): the host is
        /// not overloaded, but its time measures something else.
        case answered
        /// A sign of overload: no connection, a timeout, a dropped connection, a 429, 502, 503
        /// or 504.
        case overloaded
        /// It says nothing (cancelled, not sent, cut by its own deadline).
        case ignored
    }

    /// Bumped at each change of the whole limit, so that the host queue applies changes
    /// handed over out of order only when newer.
    private(set) var version: UInt64 = 0
    /// The floor, within the ceiling.
    private let minimumLimit: Int

    init(_ settings: AdaptiveConcurrency, ceiling: Int) {
        self.settings = settings
        self.ceiling = max(ceiling, 1)
        minimumLimit = min(max(settings.minimumLimit, 1), self.ceiling)
        initialLimit = min(max(settings.initialLimit, minimumLimit), self.ceiling)
        limit = Double(initialLimit)
    }

    /// The whole limit the host queue enforces.
    var wholeLimit: Int { max(Int(limit), 1) }

    /// An attempt was sent; returns the attempts in flight with it (for ``cameBack(_:sentAt:inFlightThen:at:)``).
    @discardableResult
    mutating func sent() -> Int {
        inFlight += 1
        return inFlight
    }

    /// The attempt sent at `sentAt`, with `inFlightThen` in flight, came back at `now` as
    /// `sample`; returns the new whole limit when it changed. The limit grows only when the
    /// attempts of its time used half of it at least: a limit nobody reaches proves nothing.
    mutating func cameBack(_ sample: Sample, sentAt: Duration, inFlightThen: Int, at now: Duration) -> Int? {
        inFlight = max(inFlight - 1, 0)
        let before = wholeLimit
        let latency = now - sentAt
        switch sample {
        case .ignored:
            return nil
        case .timed, .answered:
            let baseline = sample == .timed ? remember(latency, inFlightThen: inFlightThen, at: now) : nil as Duration?
            if let baseline, latency > slowThreshold(baseline) {
                cut(sentAt: sentAt, at: now)
            } else if Double(inFlightThen) * 2 >= limit {
                limit = min(limit + (slowStart ? 1 : 1 / limit), Double(ceiling))
            }
        case .overloaded:
            cut(sentAt: sentAt, at: now)
        }
        guard wholeLimit != before else { return nil }
        version += 1
        return wholeLimit
    }

    /// What an attempt may take over the baseline without counting as slow, whatever the
    /// tolerance: a loopback's or a LAN's jitter is not overload. 1 ms (2 ms held a limit
    /// of 5 or 6 on the benchmark's upstream of capacity 4: 0.79x to 0.92x the best fixed
    /// limit's loads/s where 1 ms, with a tolerance of 1.5, gave 0.92x to 1.08x in seven runs).
    static let jitter = Duration.milliseconds(1)

    /// Past this, an attempt is slow: the tolerance times the baseline, and ``jitter`` more
    /// at least.
    private func slowThreshold(_ baseline: Duration) -> Duration {
        max(baseline * settings.latencyTolerance, baseline + Self.jitter)
    }

    /// Cuts the limit, unless the attempt was sent before the last cut (one cut per round trip).
    private mutating func cut(sentAt: Duration, at now: Duration) {
        if let lastCut, sentAt < lastCut { return }
        limit = max(limit * settings.backoff, Double(minimumLimit))
        lastCut = now
        slowStart = false
    }

    /// Takes `latency` into the windows; returns the baseline, the fastest of the current and
    /// the last window. Any answer may lower it (the host can be that fast), but the windows
    /// move, which may raise it, only with answers to attempts sent with no more than the
    /// initial limit in flight: under more, an answer's time is partly queueing, and a baseline
    /// raised by it would creep up with the load. A host always busy keeps its last windows.
    private mutating func remember(_ latency: Duration, inFlightThen: Int, at now: Duration) -> Duration {
        if inFlightThen <= initialLimit {
            if let start = windowStart, now - start >= settings.latencyWindow {
                // After a gap of two windows or more, the last window is as old as the rest.
                fastestBefore = now - start >= settings.latencyWindow * 2 ? nil : fastest
                fastest = nil
                windowStart = now
            } else if windowStart == nil {
                windowStart = now
            }
        }
        let fastest = min(self.fastest ?? latency, latency)
        self.fastest = fastest
        return min(fastest, fastestBefore ?? fastest)
    }

    /// Whether nothing is in flight (the entry can go when the table is swept: the host starts
    /// over from the initial limit, which errs on the safe side).
    var isIdle: Bool { inFlight == 0 }
}
