import Foundation
import Synchronization

/// The soak's outcomes as they come in, from every worker.
final class SoakTally: Sendable {
    struct State: Sendable {
        /// Loads ended, by outcome: `success`, a `ServiceError` code, or a failure of the soak.
        var outcomes: [String: Int] = [:]
        /// Loads that returned a body other than the payload (a fault delivered as a success).
        var wrongBodies: [Int] = []
        /// Loads that threw something other than a `ServiceError`, by type.
        var untypedErrors: [String: Int] = [:]
        /// Loads that did not end within their bound.
        var overdue: [Int] = []
        var ended = 0
        var slowest: Duration = .zero
    }

    static let success = "success"
    static let wrongBody = "success with a wrong body"
    static let untyped = "not a ServiceError"
    static let overdue = "did not end in time"

    private let state = Mutex(State())
    private let nextLoad = Atomic<Int>(0)
    /// The sample taken when a tenth of the loads had ended.
    let atTenPercent = Mutex<ProcessSample?>(nil)

    /// The index of the next load to start.
    func claim() -> Int { nextLoad.add(1, ordering: .relaxed).oldValue }

    var snapshot: State { state.withLock { $0 } }

    /// Records the outcome of load `index`, which took `duration`; returns how many loads ended.
    func record(_ outcome: SoakOutcome, load index: Int, duration: Duration) -> Int {
        var label: String
        var wrongBody = false
        switch outcome {
        case .success(let body):
            wrongBody = body != SoakPayloads.expected(forLoad: index)
            label = wrongBody ? Self.wrongBody : Self.success
        case .failure(let code):
            label = code
        case .untypedError:
            label = Self.untyped
        case .overdue:
            label = Self.overdue
        }
        return state.withLock { state in
            state.outcomes[label, default: 0] += 1
            if wrongBody { state.wrongBodies.append(index) }
            if case .untypedError(let type) = outcome { state.untypedErrors[type, default: 0] += 1 }
            if case .overdue = outcome { state.overdue.append(index) }
            state.slowest = max(state.slowest, duration)
            state.ended += 1
            return state.ended
        }
    }
}

extension SoakTally.State {
    /// Why the outcomes fail the soak; empty when every load ended with its payload or a
    /// `ServiceError`.
    var failures: [String] {
        var reasons: [String] = []
        if !overdue.isEmpty {
            reasons.append("\(overdue.count) loads did not end in time (first: \(overdue.sorted().prefix(5)))")
        }
        if !wrongBodies.isEmpty {
            reasons.append(
                "\(wrongBodies.count) loads succeeded with a wrong body (first: \(wrongBodies.sorted().prefix(5)))")
        }
        for (type, count) in untypedErrors.sorted(by: { $0.key < $1.key }) {
            reasons.append("\(count) loads threw \(type), not a ServiceError")
        }
        return reasons
    }
}
