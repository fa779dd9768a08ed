/// One host's circuit (``CircuitBreaker``) as a state machine over time given as a `Duration`
/// since any fixed origin: closed (counting failures), open (refusing until a moment),
/// half-open (letting probes through).
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
        /// `probesOut` probes are under way, `successes` came back well.
        case halfOpen(probesOut: Int, successes: Int, coolDown: Duration)
    }

    /// What an attempt may do.
    enum Admission: Sendable, Equatable {
        /// Go: the circuit is closed.
        case pass
        /// Go as a probe: report its outcome with `probe: true`.
        case probe
        /// Do not send; the circuit lets a probe through at `until` (nil: when the probes
        /// under way come back).
        case refuse(until: Duration?)
    }

    /// How an attempt ended, for the circuit.
    enum Outcome: Sendable {
        case success
        case failure
        /// It counts for nothing (cancelled, not sent): a probe's place is given back.
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
    private let bucketLength: Duration
    /// Attempts and failures per bucket over the window, a ring indexed by the bucket's
    /// number modulo the count.
    private var attempts = [Int](repeating: 0, count: bucketCount)
    private var failures = [Int](repeating: 0, count: bucketCount)
    private var newest: Int64 = 0

    init(_ breaker: CircuitBreaker) {
        self.breaker = breaker
        bucketLength = breaker.window / Self.bucketCount
    }

    /// Whether an attempt may go at `now`.
    mutating func admit(at now: Duration) -> Admission {
        switch state {
        case .closed:
            return .pass
        case .open(let until, let coolDown):
            guard now >= until else { return .refuse(until: until) }
            state = .halfOpen(probesOut: 1, successes: 0, coolDown: coolDown)
            return .probe
        case .halfOpen(let probesOut, let successes, let coolDown):
            guard probesOut + successes < breaker.probes else { return .refuse(until: nil) }
            state = .halfOpen(probesOut: probesOut + 1, successes: successes, coolDown: coolDown)
            return .probe
        }
    }

    /// Records how an attempt admitted as `probe` (or not) ended at `now`.
    ///
    /// Outcomes of attempts admitted before the circuit last changed arrive late: a non-probe
    /// outcome counts only while closed, a probe's only while half-open.
    mutating func record(_ outcome: Outcome, probe: Bool, at now: Duration) -> Transition {
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
                return open(for: breaker.coolDown, at: now)
            }
        case .open:
            return .none
        case .halfOpen(let probesOut, let successes, let coolDown):
            guard probe else { return .none }
            switch outcome {
            case .abandoned:
                state = .halfOpen(probesOut: max(probesOut - 1, 0), successes: successes, coolDown: coolDown)
                return .none
            case .success:
                guard successes + 1 >= breaker.probes else {
                    state = .halfOpen(probesOut: max(probesOut - 1, 0), successes: successes + 1, coolDown: coolDown)
                    return .none
                }
                state = .closed(consecutive: 0)
                clearWindow()
                return .closed
            case .failure:
                return open(for: min(coolDown * 2, breaker.maximumCoolDown), at: now)
            }
        }
    }

    /// Whether the circuit is closed with nothing counted at `now` (its entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        guard case .closed(0) = state else { return false }
        _ = advance(to: now)
        return attempts.allSatisfy { $0 == 0 }
    }

    private mutating func open(for coolDown: Duration, at now: Duration) -> Transition {
        state = .open(until: now + coolDown, coolDown: coolDown)
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
