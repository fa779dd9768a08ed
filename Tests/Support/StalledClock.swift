/// A clock whose sleeps never end within a test (until cancelled): a load that waits on it
/// cannot poll, so only a notification can move it.
public struct StalledClock: Clock {
    public typealias Instant = ContinuousClock.Instant

    public init() {}

    public var now: Instant { .now }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await Task.sleep(for: .seconds(3_600))
    }
}
