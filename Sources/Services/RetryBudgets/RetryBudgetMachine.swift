/// One host's retry budget (``RetryBudget``) as a state machine over time given as a
/// `Duration` since any fixed origin: the loads sent and the retries made, counted in ten
/// buckets that together span the window, the oldest dropped as time moves on.
///
/// Pure and synchronous: ``HostPolicies`` keeps one per host under a lock, and its tests
/// drive it with made-up times.
struct RetryBudgetMachine: Sendable {
    static let bucketCount = 10

    let budget: RetryBudget
    private let bucketLength: Duration
    /// Loads and retries per bucket, a ring indexed by the bucket's number modulo the count.
    private var loads = [Int](repeating: 0, count: bucketCount)
    private var retries = [Int](repeating: 0, count: bucketCount)
    /// The number of the newest bucket (time divided by the bucket length).
    private var newest: Int64 = 0

    init(_ budget: RetryBudget) {
        self.budget = budget
        // The public field may have been set past `RetryBudget.init`'s bound.
        bucketLength = max(budget.window, .milliseconds(10)) / Self.bucketCount
    }

    /// Counts a load sent (its first attempt) at `now`.
    mutating func loadSent(at now: Duration) {
        let slot = advance(to: now)
        loads[slot] += 1
    }

    /// Whether a retry at `now` fits the budget; counts it when it does.
    mutating func retry(at now: Duration) -> Bool {
        let slot = advance(to: now)
        let allowance =
            budget.ratio * Double(loads.reduce(0, +)) + budget.minimumPerSecond * Self.seconds(budget.window)
        guard Double(retries.reduce(0, +) + 1) <= allowance else { return false }
        retries[slot] += 1
        return true
    }

    /// Whether nothing is counted any more at `now` (the host's entry can go).
    mutating func isIdle(at now: Duration) -> Bool {
        _ = advance(to: now)
        return loads.allSatisfy { $0 == 0 } && retries.allSatisfy { $0 == 0 }
    }

    /// Moves the window to `now`, emptying the buckets that fell out of it; returns the slot of
    /// `now`'s bucket. A time before the newest bucket (clocks read out of order by two
    /// threads) counts in the newest.
    private mutating func advance(to now: Duration) -> Int {
        let number = max(Int64(now / bucketLength), newest)
        if number - newest >= Int64(Self.bucketCount) {
            for index in 0..<Self.bucketCount {
                loads[index] = 0
                retries[index] = 0
            }
        } else {
            var next = newest + 1
            while next <= number {
                let slot = Int(next % Int64(Self.bucketCount))
                loads[slot] = 0
                retries[slot] = 0
                next += 1
            }
        }
        newest = number
        return Int(number % Int64(Self.bucketCount))
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
