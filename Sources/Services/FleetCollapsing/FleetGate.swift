internal import CourierCaching
internal import CourierCore

/// The in-process side of fleet-wide collapsing: one load per key asks the leasing store, the
/// others share its outcome, so a process takes at most one lease per key at a time.
///
/// The phases are a ``FleetGateMachine`` under a lock; the loads it answers are resumed after
/// the lock is released. Every follower is resumed exactly once: by ``decided(_:holdsLease:found:)``,
/// by its own cancellation, or at once when it arrives while the leader holds the lease.
final class FleetGate: Sendable {
    /// What a load does after the gate.
    enum Turn: Sendable, Equatable {
        /// Ask the leasing store (and call ``decided(_:holdsLease:found:)`` once decided).
        case lead
        /// The leader holds the lease and fetches: fetch too, joining its transfer.
        case fetch
        /// The leader found the entry another process stored: look the cache up again.
        case lookUp
    }

    /// A load waiting for its leader's decision. Checked: a fleet-collapsed load waits on the
    /// leasing store (a network round trip), so the checked continuation's allocation is noise.
    typealias Follower = CheckedContinuation<Turn, Never>

    private let machine = LockedValue(FleetGateMachine<CacheKey, Follower>())
    /// Loads waiting for a leader's decision, every key together (a test hook).
    let followers = CountWaiters()

    /// Enters the gate for `key` as load `id`: the first load leads; the others wait for its decision.
    func enter(_ key: CacheKey, id: UInt64) async -> Turn {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (follower: Follower) in
                // The test hook counts under the lock, so that it never runs behind the machine.
                let entered = machine.withLock { machine -> FleetGateMachine<CacheKey, Follower>.Entered in
                    let entered = machine.enter(key, id: id, follower: follower, taskIsCancelled: Task.isCancelled)
                    if entered == .waits { followers.add() }
                    return entered
                }
                if case .now(let turn) = entered { follower.resume(returning: turn) }
            }
        } onCancel: {
            let follower = machine.withLock { machine in
                let follower = machine.withdraw(key, id: id)
                if follower != nil { followers.add(-1) }
                return follower
            }
            follower?.resume(returning: .fetch)
        }
    }

    /// The leader decided: with `holdsLease`, it fetches under the lease (followers fetch too,
    /// and so do later arrivals until ``left(_:)``); else followers look the cache up again
    /// when `found`, or fetch.
    func decided(_ key: CacheKey, holdsLease: Bool, found: Bool) {
        let (waiting, turn) = machine.withLock { machine in
            let decided = machine.decide(key, holdsLease: holdsLease, found: found)
            followers.add(-decided.followers.count)
            return decided
        }
        for follower in waiting { follower.resume(returning: turn) }
    }

    /// The leader gave its lease back.
    func left(_ key: CacheKey) {
        machine.withLock { $0.leave(key) }
    }
}
