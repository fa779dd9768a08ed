/// The deadline of the current task's loads: set with ``withDeadline(_:isolation:_:)`` or
/// ``withDeadline(in:isolation:_:)``, and read by every load, stream and transfer started in
/// its scope (and in the tasks started there).
///
/// A load with a deadline ends by then: its attempts are sent with what is left of it as
/// their total timeout, a retry whose pause would end past it is not made (the failure that
/// asked for it is returned), a wait for a turn at the host ends with it, and a load that
/// joined an identical transfer leaves it then. It ends with `ServiceError.Code.timedOut`.
public enum Deadline {
    /// The earliest deadline of the scopes around the current task; nil outside any.
    public static var current: ContinuousClock.Instant? { storage }

    @TaskLocal static var storage: ContinuousClock.Instant?

    /// `deadline` when it comes before the current one, else the current one.
    static func earlier(of deadline: ContinuousClock.Instant) -> ContinuousClock.Instant {
        guard let current = storage else { return deadline }
        return min(current, deadline)
    }
}

/// Runs `operation` with `deadline` bounding every load, stream and transfer it starts (see
/// ``Deadline``). A deadline later than one already in force does not extend it.
///
/// ```swift
/// let user = try await withDeadline(.now + .seconds(2)) {
///     try await UserService(id: 7).load()
/// }
/// ```
public func withDeadline<T, Failure: Error>(
    _ deadline: ContinuousClock.Instant, isolation: isolated (any Actor)? = #isolation,
    _ operation: () async throws(Failure) -> T
) async throws(Failure) -> T {
    // `TaskLocal.withValue` rethrows untyped: the typed error goes through a `Result`.
    let result: Result<T, Failure> = await Deadline.$storage.withValue(
        Deadline.earlier(of: deadline),
        operation: {
            do throws(Failure) {
                return .success(try await operation())
            } catch {
                return .failure(error)
            }
        }, isolation: isolation)
    return try result.get()
}

/// Runs `operation` with a deadline `duration` from now (see ``withDeadline(_:isolation:_:)``).
///
/// A server passes what is left of its own request's time to the loads it makes:
///
/// ```swift
/// let user = try await withDeadline(in: .milliseconds(800)) {
///     try await UserService(id: 7).load()
/// }
/// ```
public func withDeadline<T, Failure: Error>(
    in duration: Duration, isolation: isolated (any Actor)? = #isolation, _ operation: () async throws(Failure) -> T
) async throws(Failure) -> T {
    try await withDeadline(.now + duration, isolation: isolation, operation)
}
