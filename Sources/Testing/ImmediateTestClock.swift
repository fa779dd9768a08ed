internal import CourierCore

/// A clock whose `sleep` returns at once, advancing its own time and recording each delay: give
/// it to `RequestCoordinator.Configuration.clock` and retry tests run without waiting.
public final class ImmediateTestClock: Clock, Sendable {
    /// A point on the clock: the total time slept so far.
    public struct Instant: InstantProtocol {
        /// Time since the clock was created.
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = LockedValue<(now: Duration, sleeps: [Duration])>((.zero, []))

    /// Creates a clock at zero.
    public init() {}

    public var now: Instant { Instant(offset: state.withLock { $0.now }) }
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Every delay slept, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Records the delay and returns at once (throws `CancellationError` when the task is cancelled).
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(deadline.offset - state.now)
            state.now = max(state.now, deadline.offset)
        }
    }
}
