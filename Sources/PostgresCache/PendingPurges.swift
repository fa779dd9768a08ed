#if PostgreSQL
package import CourierCaching
package import FoundationEssentials

/// The purges a ``PostgresCacheStore`` could not apply to the shared tier (its server down,
/// slow, or skipped after a failure), kept in order until it can. Meanwhile the store applies
/// them to what it reads (``applied(to:for:)``), so this instance never serves a row they name;
/// the other instances see them once the server has them.
///
/// A purge repeated while it waits is kept once, at its latest time; a hard purge replaces the
/// soft ones of its target and a soft one adds nothing to a hard one waiting. At most
/// ``limit`` wait: past that the oldest is given up (and logged as an error).
package struct PendingPurges: Sendable {
    /// One purge as ``CachePurging/purge(_:soft:now:)`` received it.
    package struct Purge: Sendable, Hashable {
        package let target: PurgeTarget
        package let soft: Bool
        package let now: Date

        package init(_ target: PurgeTarget, soft: Bool, now: Date) {
            self.target = target
            self.soft = soft
            self.now = now
        }
    }

    /// How many purges may wait.
    package static let limit = 1_024
    /// How many times a purge may time out before it is given up.
    package static let attempts = 3

    /// The purges waiting, oldest first.
    package private(set) var waiting: [Purge] = []
    /// The timeouts each waiting purge met.
    var timeouts: [Purge: Int] = [:]
    /// Whether a replay runs (one at a time).
    var replaying = false
    /// Whether a background retry is scheduled.
    var retrying = false
    /// The pause before the first retry (then twice the last, up to 10 s); a test hook.
    package var firstRetryPause = Duration.seconds(1)
    /// While true, nothing replays the waiting purges; a test hook.
    package var holdsReplays = false

    package init() {}

    /// Adds `purge`; returns the purge given up to keep ``limit``, if one was.
    package mutating func add(_ purge: Purge) -> Purge? {
        if !purge.soft {
            waiting.removeAll { $0.target == purge.target }
        } else if waiting.contains(where: { $0.target == purge.target && !$0.soft }) {
            return nil
        } else {
            waiting.removeAll { $0.target == purge.target }
        }
        waiting.append(purge)
        guard waiting.count > Self.limit else { return nil }
        let dropped = waiting.removeFirst()
        timeouts[dropped] = nil
        return dropped
    }

    /// Claims the replay: true (and ``replaying`` set) when purges wait and no replay runs or
    /// is held; the caller then runs it.
    package mutating func startReplay() -> Bool {
        guard !waiting.isEmpty, !replaying, !holdsReplays else { return false }
        replaying = true
        return true
    }

    /// Removes `purge` once applied or given up (unless a later one replaced it meanwhile).
    package mutating func remove(_ purge: Purge) {
        if let index = waiting.firstIndex(of: purge) { waiting.remove(at: index) }
        timeouts[purge] = nil
    }

    /// Counts a timeout of `purge`; returns whether it may be tried again.
    mutating func timedOut(_ purge: Purge) -> Bool {
        let count = (timeouts[purge] ?? 0) + 1
        timeouts[purge] = count
        return count < Self.attempts
    }

    /// What a read of `key` returns once the waiting purges are applied to `response`: nil
    /// when a hard one names it, marked stale when a soft one does (``CachedResponse/purged(at:)``).
    package func applied(to response: CachedResponse, for key: CacheKey) -> CachedResponse? {
        var result = response
        for purge in waiting where purge.target.matches(key, result) {
            guard purge.soft else { return nil }
            result = result.purged(at: purge.now)
        }
        return result
    }
}
#endif
