/// The race between a hedged load's first attempt and its hedge, as a state machine: what the
/// task group running them hears, and which outcome it keeps.
///
/// Shared under a lock by the group and the hedge's task, which asks it once its delay ran
/// out (``hedgeWakes()``): a race decided by then sends no hedge. A failure the retry policy
/// would repeat is held while the other side is out, and kept only if that side does no
/// better.
struct HedgeRace: Sendable {
    enum Side: Sendable, Equatable { case first, hedge }

    /// Where the hedge is.
    enum Hedge: Sendable, Equatable {
        /// Its delay has not run out.
        case waiting
        /// It was let go: the first attempt's failure waits for it.
        case sending
        /// It ended, was refused, or will never go.
        case over
    }

    /// What the group does with an outcome.
    enum Verdict: Sendable, Equatable {
        /// Keep it, and wait for the other side.
        case hold
        /// It wins: cancel the other side.
        case take
        /// The outcome held earlier wins.
        case takeHeld
        /// The race was decided already.
        case ignore
    }

    private(set) var hedge = Hedge.waiting
    private(set) var firstDone = false
    private(set) var decided = false
    /// The side whose outcome is held.
    private(set) var held: Side?

    /// The hedge's delay ran out: whether it may go.
    mutating func hedgeWakes() -> Bool {
        guard hedge == .waiting, !decided else { return false }
        hedge = .sending
        return true
    }

    /// `side` ended; `decisive` when the retry policy would not repeat its outcome.
    mutating func ended(_ side: Side, decisive: Bool) -> Verdict {
        let otherOut: Bool
        switch side {
        case .first:
            firstDone = true
            otherOut = hedge == .sending
            if hedge == .waiting { hedge = .over }
        case .hedge:
            otherOut = !firstDone
            hedge = .over
        }
        guard !decided else { return .ignore }
        if otherOut && !decisive {
            held = side
            return .hold
        }
        decided = true
        return .take
    }

    /// The hedge did not go (refused, or its wait was cancelled).
    mutating func hedgeNotSent() -> Verdict {
        hedge = .over
        guard !decided, firstDone else { return .ignore }
        decided = true
        return held == nil ? .ignore : .takeHeld
    }
}
