internal import CourierCore

/// The retry budgets (``RetryBudgetMachine``) of one coordinator's hosts, under a lock, on the
/// coordinator's clock (a test clock moves them as it moves the retries' pauses).
final class RetryBudgets: Sendable {
    private let budget: RetryBudget
    /// Time since the coordinator was made, on its clock.
    private let elapsed: @Sendable () -> Duration
    private let state = LockedValue([HostQueue.Host: RetryBudgetMachine]())
    /// Hosts kept before idle ones are dropped (a process that calls many hosts over its life).
    private static let sweepThreshold = 256

    init(_ budget: RetryBudget, clock: any Clock<Duration>) {
        self.budget = budget
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

    /// Counts a load sent to `host`.
    func loadSent(to host: HostQueue.Host) {
        let now = elapsed()
        state.withLock { hosts in
            if hosts[host] == nil, hosts.count >= Self.sweepThreshold {
                hosts = hosts.filter { entry in
                    var machine = entry.value
                    return !machine.isIdle(at: now)
                }
            }
            hosts[host, default: RetryBudgetMachine(budget)].loadSent(at: now)
        }
    }

    /// Whether `host`'s budget has room for a retry now; counts it when it has.
    func retry(to host: HostQueue.Host) -> Bool {
        let now = elapsed()
        return state.withLock { hosts in hosts[host, default: RetryBudgetMachine(budget)].retry(at: now) }
    }

    /// Hosts with an entry (a test hook).
    var hostCount: Int { state.withLock { $0.count } }
}
