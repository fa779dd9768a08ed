/// The in-process side of fleet-wide collapsing as a pure state machine: per cache key, whether
/// a load is deciding with the leasing store (and who waits for its decision) or holds the
/// lease. No lock, no continuation is resumed, no task: each event returns whom to answer and
/// how. Generic over the key and what a follower is, so its tests use plain values.
///
/// Per key: absent → `deciding` (the first load leads) → absent (the leader found the entry or
/// fetches without a lease) or `holding` (it took the lease) → absent (it gave the lease back).
///
/// Events and what they return:
/// - ``enter(_:id:follower:taskIsCancelled:)``: `lead` for the first load of a key, `fetch` at
///   once while the lease is held (or for a cancelled load), else the load waits.
/// - ``withdraw(_:id:)``: a waiting load was cancelled: it is answered `fetch` (fetching checks
///   cancellation first), once.
/// - ``decide(_:holdsLease:found:)``: the leader decided; every waiting load is answered
///   `lookUp` (the entry was found) or `fetch`.
/// - ``leave(_:)``: the leader gave its lease back; the next load of the key leads.
struct FleetGateMachine<Key: Hashable & Sendable, Follower: Sendable>: Sendable {
    enum Phase: Sendable {
        /// The leader is taking the lease or waiting for the entry; `followers` wait for its
        /// decision, by load id.
        case deciding(followers: [UInt64: Follower])
        /// The leader holds the lease: later loads fetch too.
        case holding
    }

    private(set) var phases: [Key: Phase] = [:]
    /// Loads waiting for a decision, every key together.
    private(set) var followerCount = 0

    enum Entered: Sendable, Equatable {
        /// Answer the load at once with this turn.
        case now(FleetGate.Turn)
        /// The load waits for the leader's decision (or its own cancellation).
        case waits
    }

    /// Load `id` arrives at `key`.
    mutating func enter(_ key: Key, id: UInt64, follower: Follower, taskIsCancelled: Bool) -> Entered {
        switch phases[key] {
        case nil:
            phases[key] = .deciding(followers: [:])
            return .now(.lead)
        case .holding:
            return .now(.fetch)
        case .deciding(var followers):
            if taskIsCancelled { return .now(.fetch) }
            phases[key] = .holding  // drops the dictionary's other reference: no copy on write
            followers[id] = follower
            phases[key] = .deciding(followers: followers)
            followerCount += 1
            return .waits
        }
    }

    /// Takes waiting load `id` out of `key`'s followers; returns it (to answer `fetch`), or nil
    /// when it was answered already.
    mutating func withdraw(_ key: Key, id: UInt64) -> Follower? {
        guard case .deciding(var followers) = phases[key] else { return nil }
        phases[key] = .holding
        let follower = followers.removeValue(forKey: id)
        phases[key] = .deciding(followers: followers)
        if follower != nil { followerCount -= 1 }
        return follower
    }

    /// The leader of `key` decided: with `holdsLease` it fetches under the lease (so do its
    /// followers, and later arrivals until ``leave(_:)``); otherwise the key is free again.
    /// Returns the followers and the turn each is answered with.
    mutating func decide(_ key: Key, holdsLease: Bool, found: Bool) -> (followers: [Follower], turn: FleetGate.Turn) {
        let turn: FleetGate.Turn = found ? .lookUp : .fetch
        guard case .deciding(let followers) = phases[key] else {
            assertionFailure("A decision without a leader deciding.")
            return ([], turn)
        }
        phases[key] = holdsLease ? .holding : nil
        followerCount -= followers.count
        return (Array(followers.values), turn)
    }

    /// The leader of `key` gave its lease back.
    mutating func leave(_ key: Key) {
        if case .holding = phases[key] { phases[key] = nil }
    }

    /// Whether no key is being decided or held.
    var isIdle: Bool { phases.isEmpty }

    /// What must hold after every event; the machine's tests check it.
    func invariantViolations() -> [String] {
        var violations: [String] = []
        var counted = 0
        for case .deciding(let followers) in phases.values { counted += followers.count }
        if counted != followerCount { violations.append("\(followerCount) followers counted, \(counted) waiting") }
        return violations
    }
}
