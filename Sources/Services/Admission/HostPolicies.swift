internal import CourierCore

/// The upstream-protection machines of one coordinator's hosts, under one lock, on the
/// coordinator's clock (a test clock moves them as it moves the retries' pauses): each host's
/// retry budget (``RetryBudgetMachine``), circuit (``CircuitBreakerMachine``) and adaptive
/// limit (``AdaptiveLimitMachine``, whose changes the coordinator hands to ``HostQueue``), and
/// for hosts that hedged loads go to, their hedging state (``HedgeMachine``).
///
/// One table for both, so that an attempt costs one lock and one look-up before it goes and one
/// after: ``admit(_:first:usesCircuit:timesLimit:)`` asks the circuit and counts a load's first
/// attempt in the budget, ``record(_:_:sample:pass:)`` tells the circuit and the adaptive limit
/// how the attempt ended. A retry adds one
/// of each (``refuses(_:after:)``, ``retry(to:)``).
final class HostPolicies: Sendable {
    struct Entry: Sendable {
        var budget: RetryBudgetMachine?
        var circuit: CircuitBreakerMachine?
        var limit: AdaptiveLimitMachine?
        /// Made by the host's first hedged load.
        var hedges: HedgeMachine?
        /// When the host's pause ends (`Retry-After`, this process's or the fleet's).
        var pausedUntil: Duration?

        mutating func isIdle(at now: Duration) -> Bool {
            (budget?.isIdle(at: now) ?? true) && (circuit?.isIdle(at: now) ?? true) && (limit?.isIdle ?? true)
                && (hedges?.isIdle(at: now) ?? true) && (pausedUntil ?? .zero) <= now
        }
    }

    /// What an attempt may do: ``CircuitBreakerMachine/Admission`` with the time read.
    struct Admission: Sendable {
        var circuit: CircuitBreakerMachine.Admission
        var now: Duration
        /// Attempts in flight to the host with this one (nil: the adaptive limit does not count it).
        var inFlight: Int?
        /// When the host's pause ends, when a pause refused the attempt (its circuit was not asked).
        var pausedUntil: Duration?
    }

    /// An attempt that went: its circuit ticket and when it was sent, to report its outcome.
    struct Pass: Sendable {
        var ticket: CircuitBreakerMachine.Ticket
        var sentAt: Duration
        /// Attempts in flight with it, counted by the adaptive limit; nil when the limit does
        /// not count it (a stream or download, whose time is its body's).
        var inFlight: Int?
    }

    /// What an attempt's outcome changed.
    struct Changes: Sendable {
        var circuit = CircuitBreakerMachine.Transition.none
        /// The host's new adaptive limit, when it moved, and its version.
        var limit: Int?
        var limitVersion: UInt64 = 0
    }

    private let budget: RetryBudget?
    private let breaker: CircuitBreaker?
    private let adaptive: AdaptiveConcurrency?
    /// The most an adaptive limit may reach (`maximumLoadsPerHost`).
    private let ceiling: Int
    /// Time on the coordinator's clock since a fixed origin (`Moment`'s for the continuous
    /// clock, the table's making for another).
    private let elapsed: @Sendable () -> Duration
    private let state = LockedValue([HostQueue.Host: Entry]())
    /// Hosts kept before idle ones are dropped (a process that calls many hosts over its life).
    private static let sweepThreshold = 256

    /// Whether attempts ask the table before they go and tell it after: there is a budget, a
    /// circuit, an adaptive limit or host pauses to keep (hedged loads use it either way).
    let guardsAttempts: Bool
    /// Whether hosts may be paused (the coordinator shares pauses with a fleet).
    private let pauses: Bool

    /// The table of a coordinator with these policies.
    init(
        budget: RetryBudget?, breaker: CircuitBreaker?, adaptive: AdaptiveConcurrency? = nil, ceiling: Int = 0,
        pauses: Bool = false, clock: any Clock<Duration>
    ) {
        let adaptive = ceiling > 0 ? adaptive : nil
        guardsAttempts = budget != nil || breaker != nil || adaptive != nil || pauses
        self.pauses = pauses
        self.budget = budget
        self.breaker = breaker
        self.adaptive = adaptive
        self.ceiling = ceiling
        // The continuous clock without the generic reader's witness calls (the usual case).
        if clock is ContinuousClock {
            elapsed = { Moment.now.sinceOrigin }
        } else {
            elapsed = Self.reader(clock)
        }
    }

    private static func reader<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Whether outcomes are reported: hosts have circuits or adaptive limits.
    var watchesOutcomes: Bool { breaker != nil || adaptive != nil }

    /// Asks `host`'s pause (when `network`) and circuit whether an attempt may go
    /// (`usesCircuit` false: the circuit lets it), and
    /// counts a load in its retry budget when this is the load's `first` attempt and it goes
    /// (a load an open circuit refused is not one the host was sent); counts it in flight for
    /// the adaptive limit when `timesLimit`.
    func admit(
        _ host: HostQueue.Host, first: Bool, network: Bool = true, usesCircuit: Bool, timesLimit: Bool
    ) -> Admission {
        let now = elapsed()
        var inFlight: Int?
        var pausedUntil: Duration?
        let circuit = state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in
                if network, let until = entry.pausedUntil, until > now {
                    pausedUntil = until
                    return CircuitBreakerMachine.Admission.refuse(until: until)
                }
                let admission =
                    usesCircuit ? entry.circuit?.admit(at: now) ?? Self.unbroken : Self.unbroken
                if case .go = admission {
                    if first { entry.budget?.loadSent(at: now) }
                    if usesCircuit, timesLimit, let sent = entry.limit?.sent() { inFlight = sent }
                }
                return admission
            }
        }
        return Admission(circuit: circuit, now: now, inFlight: inFlight, pausedUntil: pausedUntil)
    }

    /// What an attempt no circuit watches gets.
    static let unbroken = CircuitBreakerMachine.Admission.go(.init(generation: 0, probe: false))

    /// Tells `host`'s circuit and adaptive limit how the attempt of `pass` ended.
    func record(
        _ host: HostQueue.Host, _ outcome: CircuitBreakerMachine.Outcome, sample: AdaptiveLimitMachine.Sample,
        pass: Pass
    ) -> Changes {
        let now = elapsed()
        return state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in
                var changes = Changes()
                changes.circuit = entry.circuit?.record(outcome, pass.ticket, at: now) ?? .none
                if let inFlight = pass.inFlight,
                    let limit = entry.limit?.cameBack(
                        sample, sentAt: pass.sentAt, inFlightThen: inFlight, at: now)
                {
                    changes.limit = limit
                    changes.limitVersion = entry.limit?.version ?? 0
                }
                return changes
            }
        }
    }

    /// Whether `host`'s retry budget has room for a retry now; counts it when it has.
    func retry(to host: HostQueue.Host) -> Bool {
        guard budget != nil else { return true }
        let now = elapsed()
        return state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in entry.budget?.retry(at: now) ?? true }
        }
    }

    /// Why an attempt would be refused.
    enum Refusal: Sendable, Equatable {
        /// The host is paused for `left` more.
        case paused(left: Duration)
        /// Its circuit is open.
        case circuit
    }

    /// Why `host`'s pause or circuit would refuse an attempt `delay` from now (a retry's
    /// pause), if either would.
    func refusal(_ host: HostQueue.Host, after delay: Duration) -> Refusal? {
        guard breaker != nil || pauses else { return nil }
        let now = elapsed()
        return state.withLock { hosts in
            guard let entry = hosts[host] else { return nil }
            if let until = entry.pausedUntil, until > now + delay { return .paused(left: until - now) }
            return entry.circuit?.refuses(at: now, after: delay) == true ? .circuit : nil
        }
    }

    /// Whether `host`'s pause or circuit would refuse an attempt `delay` from now.
    func refuses(_ host: HostQueue.Host, after delay: Duration) -> Bool { refusal(host, after: delay) != nil }

    /// Pauses `host` for `duration` from now, unless a pause that ends no more than
    /// `tolerance` sooner is on (the fleet's copy of this process's own pause, read back a
    /// moment later, changes nothing); whether the host was not paused before.
    @discardableResult
    func pause(_ host: HostQueue.Host, for duration: Duration, tolerance: Duration = .zero) -> Bool {
        guard pauses, duration > .zero else { return false }
        let now = elapsed()
        return state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in
                let current = entry.pausedUntil ?? .zero
                if now + duration > current + tolerance { entry.pausedUntil = now + duration }
                return current <= now
            }
        }
    }

    /// Counts a hedged load's first attempt to `host`, sent now, and says when its hedge would
    /// go (nil: it will not); `sentAt` is when it was sent, for ``answered(_:sentAt:)``.
    func hedgedLoadSent(to host: HostQueue.Host, _ hedging: Hedging) -> (delay: Duration?, sentAt: Duration) {
        let now = elapsed()
        let delay = state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in
                var machine = entry.hedges ?? HedgeMachine()
                defer { entry.hedges = machine }
                return machine.loadSent(hedging, at: now)
            }
        }
        return (delay, now)
    }

    /// Whether a hedge to `host` may go now: nil when it may (it is counted in the hedge share
    /// and the retry budget), else why not (`share`, `budget`).
    func hedge(to host: HostQueue.Host, _ hedging: Hedging) -> String? {
        let now = elapsed()
        return state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in
                var machine = entry.hedges ?? HedgeMachine()
                defer { entry.hedges = machine }
                guard machine.hasRoom(hedging, at: now) else { return "share" }
                if entry.budget?.retry(at: now) == false { return "budget" }
                machine.hedgeSent(at: now)
                return nil
            }
        }
    }

    /// Counts how long a hedged load to `host` sent at `sentAt` took, until now.
    func answered(_ host: HostQueue.Host, sentAt: Duration) {
        let now = elapsed()
        state.withLock { hosts in
            withEntry(host, in: &hosts, at: now) { entry in entry.hedges?.answered(after: now - sentAt, at: now) }
        }
    }

    /// `host`'s adaptive limit now (a test hook; nil: none).
    func adaptiveLimit(of host: HostQueue.Host) -> Int? { state.withLock { $0[host]?.limit?.wholeLimit } }

    /// What an attempt's `outcome` tells its host's circuit and adaptive limit.
    ///
    /// The circuit: a failure of the host (``CircuitBreaker/isFailure(status:error:)``), a
    /// success, or nothing (a cancelled load, or a timeout `cutByTheLoad` says the load brought
    /// on itself). The adaptive limit: overloaded on a failure of the host or a 429 (a circuit
    /// leaves a 429 to `Retry-After`); timed only by a plain answer (a 2xx other than 304, over
    /// an open connection, without redirects), whose time is the host's.
    static func judge(
        _ outcome: Result<TransportResponse, ServiceError>, cutByTheLoad: (ServiceError) -> Bool
    ) -> (CircuitBreakerMachine.Outcome, AdaptiveLimitMachine.Sample) {
        switch outcome {
        case .success(let response):
            let status = response.head.status.code
            if CircuitBreaker.isFailure(status: status, error: nil) == true { return (.failure, .overloaded) }
            if status == 429 { return (.success, .overloaded) }
            let metrics = response.metrics
            let plain =
                (200..<300).contains(status) && status != 304 && metrics.newConnections == 0
                && metrics.redirectCount == 0
            return (.success, plain ? .timed : .answered)
        case .failure(let error):
            if cutByTheLoad(error) { return (.abandoned, .ignored) }
            let status = error.status?.code
            switch CircuitBreaker.isFailure(status: status, error: error) {
            case nil: return (.abandoned, .ignored)
            case true?: return (.failure, .overloaded)
            case false?: return (.success, status == 429 ? .overloaded : .answered)
            }
        }
    }

    /// Runs `body` on `host`'s entry, made when missing, in place; a new host past
    /// ``sweepThreshold`` first drops the idle ones at `now`.
    private func withEntry<T>(
        _ host: HostQueue.Host, in hosts: inout [HostQueue.Host: Entry], at now: Duration,
        _ body: (inout Entry) -> T
    ) -> T {
        if hosts[host] == nil, hosts.count >= Self.sweepThreshold {
            hosts = hosts.filter { entry in
                var entry = entry.value
                return !entry.isIdle(at: now)
            }
        }
        return body(
            &hosts[
                host,
                default: Entry(
                    budget: budget.map(RetryBudgetMachine.init), circuit: breaker.map(CircuitBreakerMachine.init),
                    limit: adaptive.map { AdaptiveLimitMachine($0, ceiling: ceiling) })
            ])
    }
}
