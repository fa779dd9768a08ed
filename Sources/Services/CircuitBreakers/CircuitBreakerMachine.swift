/// One host's circuit (``CircuitBreaker``) as a state machine over time given as a `Duration`
/// since any fixed origin: closed (counting failures), open (refusing until a moment),
/// half-open (letting probes through).
///
/// Every state the circuit enters is a new generation; an attempt is admitted with the
/// generation it was admitted in (``Ticket``) and its outcome counts only in that generation:
/// an attempt sent before the circuit opened, or a probe of an earlier half-open spell, that
/// comes back late changes nothing.
///
/// Pure and synchronous: ``HostPolicies`` keeps one per host under a lock, performs what its
/// transitions say (events, metrics), and its tests drive it with made-up times.
struct CircuitBreakerMachine: Sendable {
    enum State: Sendable, Equatable {
        /// Attempts go through; `consecutive` failed in a row.
        case closed(consecutive: Int)
        /// Attempts are refused until `until`; the next cool-down is `coolDown` doubled.
        case open(until: Duration, coolDown: Duration)
        /// `probesOut` probes are under way (the oldest sent at `since`), `successes` came
        /// back well.
        case halfOpen(probesOut: Int, successes: Int, coolDown: Duration, since: Duration)
    }

    /// An admitted attempt: the generation it belongs to, and whether it is a probe.
    struct Ticket: Sendable, Equatable {
        var generation: UInt32
        var probe: Bool
    }

    /// What an attempt may do.
    enum Admission: Sendable, Equatable {
        /// Go (as a probe when the ticket says so), and report the outcome with the ticket.
        case go(Ticket)
        /// Do not send; the circuit lets a probe through at `until` (nil: when the probes
        /// under way come back, or time out).
        case refuse(until: Duration?)
    }

    /// How an attempt ended, for the circuit.
    enum Outcome: Sendable {
        case success
        case failure
        /// It says nothing about the host (cancelled, cut by its own deadline, not sent): a
        /// probe's place is given back.
        case abandoned
    }

    /// What changed, for the shell to report.
    enum Transition: Sendable, Equatable {
        case none
        /// The circuit opened (or opened again after a failed probe) for `coolDown`.
        case opened(coolDown: Duration)
        case closed
    }

    let breaker: CircuitBreaker
    private(set) var state = State.closed(consecutive: 0)
    private(set) var generation: UInt32 = 0
    /// How long a probe may stay out before it counts as failed (a host that accepts
    /// connections and never answers would otherwise hold the place for good).
    let probeTimeout: Duration
    /// Attempts (first) and failures (second) over the window, for the failure rate.
    private var counts: WindowCounts

    init(_ breaker: CircuitBreaker) {
        self.breaker = breaker
        counts = WindowCounts(window: breaker.window)
        probeTimeout = max(breaker.coolDown, .seconds(10))
    }

    /// Whether an attempt may go at `now`.
    mutating func admit(at now: Duration) -> Admission {
        switch state {
        case .closed:
            return .go(Ticket(generation: generation, probe: false))
        case .open(let until, let coolDown):
            guard now >= until else { return .refuse(until: until) }
            enter(.halfOpen(probesOut: 1, successes: 0, coolDown: coolDown, since: now))
            return .go(Ticket(generation: generation, probe: true))
        case .halfOpen(let probesOut, let successes, let coolDown, let since):
            if probesOut > 0, now - since >= probeTimeout {
                // The probe never came back: as good as failed.
                _ = open(for: min(coolDown * 2, maximumCoolDown), at: now)
                return admit(at: now)
            }
            guard probesOut + successes < breaker.probes else { return .refuse(until: nil) }
            state = .halfOpen(
                probesOut: probesOut + 1, successes: successes, coolDown: coolDown, since: probesOut == 0 ? now : since)
            return .go(Ticket(generation: generation, probe: true))
        }
    }

    /// Whether an attempt at `now + delay` would be refused (a retry's pause): the circuit is
    /// open past it, or half-open with every probe's place taken.
    func refuses(at now: Duration, after delay: Duration) -> Bool {
        switch state {
        case .closed: false
        case .open(let until, _): until > now + delay
        case .halfOpen(let probesOut, let successes, _, _): probesOut + successes >= breaker.probes
        }
    }

    /// Records how the attempt of `ticket` ended at `now`; outcomes of another generation
    /// change nothing.
    mutating func record(_ outcome: Outcome, _ ticket: Ticket, at now: Duration) -> Transition {
        guard ticket.generation == generation else { return .none }
        switch state {
        case .closed(let consecutive):
            switch outcome {
            case .abandoned:
                return .none
            case .success:
                count(failed: false, at: now)
                state = .closed(consecutive: 0)
                return .none
            case .failure:
                count(failed: true, at: now)
                let inARow = consecutive + 1
                guard inARow >= breaker.consecutiveFailures || rateExceeded(at: now) else {
                    state = .closed(consecutive: inARow)
                    return .none
                }
                return open(for: min(breaker.coolDown, maximumCoolDown), at: now)
            }
        case .open:
            return .none
        case .halfOpen(let probesOut, let successes, let coolDown, let since):
            guard ticket.probe else { return .none }
            switch outcome {
            case .abandoned:
                state = .halfOpen(
                    probesOut: max(probesOut - 1, 0), successes: successes, coolDown: coolDown, since: since)
                return .none
            case .success:
                guard successes + 1 >= breaker.probes else {
                    state = .halfOpen(
                        probesOut: max(probesOut - 1, 0), successes: successes + 1, coolDown: coolDown, since: since)
                    return .none
                }
                enter(.closed(consecutive: 0))
                counts.clear()
                return .closed
            case .failure:
                return open(for: min(coolDown * 2, maximumCoolDown), at: now)
            }
        }
    }

    /// Whether the circuit is closed with nothing counted at `now` (its entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        guard case .closed(0) = state else { return false }
        return counts.totals(at: now).first == 0
    }

    private var maximumCoolDown: Duration { max(breaker.maximumCoolDown, .milliseconds(1)) }

    private mutating func enter(_ next: State) {
        state = next
        generation &+= 1
    }

    private mutating func open(for coolDown: Duration, at now: Duration) -> Transition {
        enter(.open(until: now + coolDown, coolDown: coolDown))
        counts.clear()
        return .opened(coolDown: coolDown)
    }

    private mutating func count(failed: Bool, at now: Duration) {
        counts.add(first: 1, second: failed ? 1 : 0, at: now)
    }

    private mutating func rateExceeded(at now: Duration) -> Bool {
        let (attempts, failures) = counts.totals(at: now)
        return attempts >= breaker.minimumAttempts && Double(failures) >= breaker.failureRate * Double(attempts)
    }
}
