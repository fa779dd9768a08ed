/// How many retries a coordinator may add to what it sends one host: a share of the loads
/// it sent there recently, plus a small floor (the model of Finagle's and Envoy's retry
/// budgets).
///
/// Without a budget, the retry policy multiplies the requests an upstream gets exactly when
/// it fails: three attempts per load against an upstream that fails everything is three times
/// its load. With the default budget, retries add at most 20% of the loads of the last 10
/// seconds, plus 1 per second of that window; past it a retry the policy wanted is not made,
/// and the load ends with the failure that asked for it.
///
/// ```swift
/// var configuration = RequestCoordinator.Configuration()
/// configuration.retryBudget = RetryBudget(ratio: 0.1, minimumPerSecond: 2)
/// ```
public struct RetryBudget: Sendable, Hashable {
    /// Retries allowed per load sent, over ``window`` (0.2: one retry for every five loads).
    public var ratio: Double
    /// Retries allowed per second of ``window`` whatever the loads, so that a host called
    /// seldom still gets its retries.
    public var minimumPerSecond: Double
    /// How far back loads and retries count.
    public var window: Duration

    /// A budget; the defaults are those of ``default``.
    public init(ratio: Double = 0.2, minimumPerSecond: Double = 1, window: Duration = .seconds(10)) {
        self.ratio = max(ratio, 0)
        self.minimumPerSecond = max(minimumPerSecond, 0)
        self.window = max(window, .milliseconds(10))
    }

    /// 20% of the last 10 seconds' loads, plus 1 per second.
    public static let `default` = RetryBudget()
}
