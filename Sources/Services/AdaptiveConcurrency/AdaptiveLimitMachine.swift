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
        case success
        /// A sign of overload: a timeout, a dropped connection, a 429, 502, 503 or 504.
        case overloaded
        /// It says nothing (cancelled, not sent, another failure).
        case ignored
    }

    init(_ settings: AdaptiveConcurrency, ceiling: Int) {
        self.settings = settings
        self.ceiling = max(ceiling, 1)
        initialLimit = min(max(settings.initialLimit, settings.minimumLimit), self.ceiling)
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
        case .success:
            let baseline = remember(latency, at: now)
            if latency > slowThreshold(baseline) {
                cut(sentAt: sentAt, at: now)
            } else if Double(inFlightThen) * 2 >= limit {
                limit = min(limit + (slowStart ? 1 : 1 / limit), Double(ceiling))
            }
        case .overloaded:
            cut(sentAt: sentAt, at: now)
        }
        return wholeLimit == before ? nil : wholeLimit
    }

    /// Past this, an attempt is slow: the tolerance times the baseline, and 2 ms more at least.
    private func slowThreshold(_ baseline: Duration) -> Duration {
        max(baseline * settings.latencyTolerance, baseline + .milliseconds(2))
    }

    /// Cuts the limit, unless the attempt was sent before the last cut (one cut per round trip).
    private mutating func cut(sentAt: Duration, at now: Duration) {
        if let lastCut, sentAt < lastCut { return }
        limit = max(limit * settings.backoff, Double(settings.minimumLimit))
        lastCut = now
        slowStart = false
    }

    /// Takes `latency` into the windows; returns the baseline (the fastest of both windows).
    private mutating func remember(_ latency: Duration, at now: Duration) -> Duration {
        if let start = windowStart, now - start >= settings.latencyWindow {
            fastestBefore = fastest
            fastest = nil
            windowStart = now
        } else if windowStart == nil {
            windowStart = now
        }
        fastest = min(fastest ?? latency, latency)
        return min(fastest!, fastestBefore ?? fastest!)
    }

    /// Whether nothing is in flight and the limit is where it starts (the entry can go).
    var isIdle: Bool { inFlight == 0 && wholeLimit == initialLimit }
}
