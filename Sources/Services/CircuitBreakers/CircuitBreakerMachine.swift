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
    static let bucketCount = 10

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
    private let bucketLength: Duration
    /// How long a probe may stay out before it counts as failed (a host that accepts
    /// connections and never answers would otherwise hold the place for good).
    let probeTimeout: Duration
    /// Attempts and failures per bucket over the window, a ring indexed by the bucket's
    /// number modulo the count.
    private var attempts = [Int](repeating: 0, count: bucketCount)
    private var failures = [Int](repeating: 0, count: bucketCount)
    private var newest: Int64 = 0

    init(_ breaker: CircuitBreaker) {
        self.breaker = breaker
        // The public fields may have been set past `init`'s bounds.
        bucketLength = max(breaker.window, .milliseconds(10)) / Self.bucketCount
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
                guard inARow >= breaker.consecutiveFailures || rateExceeded() else {
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
                clearWindow()
                return .closed
            case .failure:
                return open(for: min(coolDown * 2, maximumCoolDown), at: now)
            }
        }
    }

    /// Whether the circuit is closed with nothing counted at `now` (its entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        guard case .closed(0) = state else { return false }
        _ = advance(to: now)
        return attempts.allSatisfy { $0 == 0 }
    }

    private var maximumCoolDown: Duration { max(breaker.maximumCoolDown, .milliseconds(1)) }

    private mutating func enter(_ next: State) {
        state = next
        generation &+= 1
    }

    private mutating func open(for coolDown: Duration, at now: Duration) -> Transition {
        enter(.open(until: now + coolDown, coolDown: coolDown))
        clearWindow()
        return .opened(coolDown: coolDown)
    }

    private mutating func count(failed: Bool, at now: Duration) {
        let slot = advance(to: now)
        attempts[slot] += 1
        if failed { failures[slot] += 1 }
    }

    private func rateExceeded() -> Bool {
        let total = attempts.reduce(0, +)
        return total >= breaker.minimumAttempts && Double(failures.reduce(0, +)) >= breaker.failureRate * Double(total)
    }

    private mutating func clearWindow() {
        for index in 0..<Self.bucketCount {
            attempts[index] = 0
            failures[index] = 0
        }
    }

    /// Moves the window to `now`, emptying the buckets that fell out of it; returns the slot of
    /// `now`'s bucket. A time before the newest bucket counts in the newest.
    private mutating func advance(to now: Duration) -> Int {
        let number = max(Int64(now / bucketLength), newest)
        if number - newest >= Int64(Self.bucketCount) {
            clearWindow()
        } else {
            var next = newest + 1
            while next <= number {
                let slot = Int(next % Int64(Self.bucketCount))
                attempts[slot] = 0
                failures[slot] = 0
                next += 1
            }
        }
        newest = number
        return Int(number % Int64(Self.bucketCount))
    }
}
