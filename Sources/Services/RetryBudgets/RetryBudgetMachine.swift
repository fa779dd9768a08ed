/// One host's retry budget (``RetryBudget``) as a state machine over time given as a
/// `Duration` since any fixed origin: the loads sent and the retries made over the window
/// (``WindowCounts``).
///
/// Pure and synchronous: ``HostPolicies`` keeps one per host under a lock, and its tests
/// drive it with made-up times.
struct RetryBudgetMachine: Sendable {
    let budget: RetryBudget
    /// Loads sent (first) and retries made (second).
    private var counts: WindowCounts

    init(_ budget: RetryBudget) {
        self.budget = budget
        counts = WindowCounts(window: budget.window)
    }

    /// Counts a load sent (its first attempt) at `now`.
    mutating func loadSent(at now: Duration) {
        counts.add(first: 1, at: now)
    }

    /// Whether a retry at `now` fits the budget; counts it when it does.
    mutating func retry(at now: Duration) -> Bool {
        let (loads, retries) = counts.totals(at: now)
        let allowance = budget.ratio * Double(loads) + budget.minimumPerSecond * Self.seconds(budget.window)
        guard Double(retries + 1) <= allowance else { return false }
        counts.add(second: 1, at: now)
        return true
    }

    /// Whether nothing is counted any more at `now` (the host's entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        counts.totals(at: now) == (0, 0)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
