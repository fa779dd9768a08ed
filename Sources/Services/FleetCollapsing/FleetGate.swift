internal import CourierCaching
internal import CourierCore

/// The in-process side of fleet-wide collapsing: one load per key asks the leasing store, the
/// others share its outcome, so a process takes at most one lease per key at a time.
///
/// Every follower's continuation is resumed exactly once: by ``decided(_:holdsLease:found:)``, by its own
/// cancellation, or at once when it arrives while the leader holds the lease.
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

    private enum Phase {
        /// The leader is taking the lease or waiting for the entry.
        case deciding(followers: [UInt64: UnsafeContinuation<Turn, Never>])
        /// The leader holds the lease.
        case holding
    }

    private let phases = LockedValue<[CacheKey: Phase]>([:])
    /// Loads waiting for a leader's decision, every key together (a test hook).
    let followers = CountWaiters()

    /// Enters the gate for `key` as load `id`: the first load leads; the others wait for its decision.
    func enter(_ key: CacheKey, id: UInt64) async -> Turn {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Turn, Never>) in
                let now = phases.withLock { phases -> Turn? in
                    switch phases[key] {
                    case nil:
                        phases[key] = .deciding(followers: [:])
                        return .lead
                    case .holding:
                        return .fetch
                    case .deciding(var followers):
                        if Task.isCancelled { return .fetch }  // fetching checks cancellation first
                        followers[id] = continuation
                        phases[key] = .deciding(followers: followers)
                        self.followers.add()
                        return nil
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let continuation = phases.withLock { phases -> UnsafeContinuation<Turn, Never>? in
                guard case .deciding(var followers) = phases[key], let continuation = followers.removeValue(forKey: id)
                else { return nil }
                phases[key] = .deciding(followers: followers)
                self.followers.add(-1)
                return continuation
            }
            continuation?.resume(returning: .fetch)
        }
    }

    /// The leader decided: with `holdsLease`, it fetches under the lease (followers fetch too,
    /// and so do later arrivals until ``left(_:)``); else followers look the cache up again
    /// when `found`, or fetch.
    func decided(_ key: CacheKey, holdsLease: Bool, found: Bool) {
        let followers = phases.withLock { phases -> [UnsafeContinuation<Turn, Never>] in
            guard case .deciding(let followers) = phases[key] else { return [] }
            phases[key] = holdsLease ? .holding : nil
            self.followers.add(-followers.count)
            return Array(followers.values)
        }
        let turn: Turn = found ? .lookUp : .fetch
        for follower in followers { follower.resume(returning: turn) }
    }

    /// The leader gave its lease back.
    func left(_ key: CacheKey) {
        phases.withLock { phases in
            if case .holding = phases[key] { phases[key] = nil }
        }
    }
}
