internal import CourierCore

/// The upstream-protection machines of one coordinator's hosts, under one lock, on the
/// coordinator's clock (a test clock moves them as it moves the retries' pauses): each host's
/// retry budget (``RetryBudgetMachine``) and circuit (``CircuitBreakerMachine``).
///
/// One table for both, so that an attempt costs one lock and one look-up: ``admit(_:first:)``
/// counts a load's first attempt in the budget and asks the circuit, ``record(_:_:probe:)``
/// tells the circuit how the attempt ended.
final class HostPolicies: Sendable {
    struct Entry: Sendable {
        var budget: RetryBudgetMachine?
        var circuit: CircuitBreakerMachine?

        mutating func isIdle(at now: Duration) -> Bool {
            (budget?.isIdle(at: now) ?? true) && (circuit?.isIdle(at: now) ?? true)
        }
    }

    /// What an attempt may do: ``CircuitBreakerMachine/Admission`` with the time read.
    struct Admission: Sendable {
        var circuit: CircuitBreakerMachine.Admission
        var now: Duration
    }

    private let budget: RetryBudget?
    private let breaker: CircuitBreaker?
    /// Time since the coordinator was made, on its clock.
    private let elapsed: @Sendable () -> Duration
    private let state = LockedValue([HostQueue.Host: Entry]())
    /// Hosts kept before idle ones are dropped (a process that calls many hosts over its life).
    private static let sweepThreshold = 256

    /// The table, or nil when there is neither a budget nor a circuit to keep.
    init?(budget: RetryBudget?, breaker: CircuitBreaker?, clock: any Clock<Duration>) {
        guard budget != nil || breaker != nil else { return nil }
        self.budget = budget
        self.breaker = breaker
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

    /// Whether hosts have circuits.
    var breaks: Bool { breaker != nil }

    /// Asks `host`'s circuit whether an attempt may go (`usesCircuit` false: it may), and
    /// counts a load in its retry budget when this is the load's `first` attempt.
    func admit(_ host: HostQueue.Host, first: Bool, usesCircuit: Bool) -> Admission {
        let now = elapsed()
        let circuit = state.withLock { hosts in
            if hosts[host] == nil, hosts.count >= Self.sweepThreshold {
                hosts = hosts.filter { entry in
                    var entry = entry.value
                    return !entry.isIdle(at: now)
                }
            }
            return Self.withEntry(host, in: &hosts, budget: budget, breaker: breaker) { entry in
                if first { entry.budget?.loadSent(at: now) }
                guard usesCircuit else { return CircuitBreakerMachine.Admission.pass }
                return entry.circuit?.admit(at: now) ?? .pass
            }
        }
        return Admission(circuit: circuit, now: now)
    }

    /// Tells `host`'s circuit how an attempt admitted as `probe` (or not) ended.
    func record(
        _ host: HostQueue.Host, _ outcome: CircuitBreakerMachine.Outcome, probe: Bool
    ) -> CircuitBreakerMachine.Transition {
        guard breaker != nil else { return .none }
        let now = elapsed()
        return state.withLock { hosts in
            Self.withEntry(host, in: &hosts, budget: budget, breaker: breaker) { entry in
                entry.circuit?.record(outcome, probe: probe, at: now) ?? .none
            }
        }
    }

    /// Whether `host`'s retry budget has room for a retry now; counts it when it has.
    func retry(to host: HostQueue.Host) -> Bool {
        guard budget != nil else { return true }
        let now = elapsed()
        return state.withLock { hosts in
            Self.withEntry(host, in: &hosts, budget: budget, breaker: breaker) { entry in
                entry.budget?.retry(at: now) ?? true
            }
        }
    }

    /// How long `host`'s circuit stays open from now (nil: it is not open).
    func openFor(_ host: HostQueue.Host) -> Duration? {
        guard breaker != nil else { return nil }
        let now = elapsed()
        return state.withLock { hosts -> Duration? in
            guard case .open(let until, _) = hosts[host]?.circuit?.state, until > now else { return nil }
            return until - now
        }
    }

    /// Hosts with an entry (a test hook).
    var hostCount: Int { state.withLock { $0.count } }

    /// Runs `body` on `host`'s entry, made when missing, in place.
    private static func withEntry<T>(
        _ host: HostQueue.Host, in hosts: inout [HostQueue.Host: Entry], budget: RetryBudget?,
        breaker: CircuitBreaker?, _ body: (inout Entry) -> T
    ) -> T {
        body(
            &hosts[
                host,
                default: Entry(
                    budget: budget.map(RetryBudgetMachine.init), circuit: breaker.map(CircuitBreakerMachine.init))
            ])
    }
}
