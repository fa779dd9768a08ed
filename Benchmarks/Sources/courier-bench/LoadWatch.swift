import Foundation
import Synchronization

/// What became of one soak load.
enum SoakOutcome: Sendable {
    /// The load returned this body.
    case success(Data)
    /// The load threw a `ServiceError` with this code (its `description`).
    case failure(String)
    /// The load threw something that is not a `ServiceError`: a broken API promise.
    case untypedError(String)
    /// The load did not end within its bound; the worker gave up waiting for it.
    case overdue
}

/// One worker's load in flight, so that a load that never ends cannot stall the soak: the load
/// runs in a task of its own, the worker waits on a continuation, and whichever comes first
/// resumes it: the load's end, or ``expire(olderThan:now:)`` (which then cancels the load).
final class LoadWatch: Sendable {
    private struct Watched {
        var index: Int
        var started: ContinuousClock.Instant
        var continuation: CheckedContinuation<SoakOutcome, Never>?
        var task: Task<Void, Never>?
    }

    private let state = Mutex<Watched?>(nil)
    /// Loads that ended after ``expire(olderThan:now:)`` gave up on them (they were cancelled).
    let lateEndings: Atomic<Int>

    init(lateEndings: Int = 0) { self.lateEndings = Atomic(lateEndings) }

    /// Runs `load` for load `index` and returns its outcome, or `.overdue` once it has run longer
    /// than the bound a watchdog enforces through ``expire(olderThan:now:)``.
    func run(_ index: Int, _ load: @escaping @Sendable () async -> SoakOutcome) async -> SoakOutcome {
        await withCheckedContinuation { continuation in
            state.withLock { $0 = Watched(index: index, started: .now, continuation: continuation) }
            let task = Task {
                let outcome = await load()
                let waiting = self.state.withLock { watched -> CheckedContinuation<SoakOutcome, Never>? in
                    guard watched?.index == index, let continuation = watched?.continuation else { return nil }
                    watched = nil
                    return continuation
                }
                if let waiting {
                    waiting.resume(returning: outcome)
                } else {
                    self.lateEndings.add(1, ordering: .relaxed)
                }
            }
            state.withLock { watched in
                if watched?.index == index { watched?.task = task }
            }
        }
    }

    /// Gives up on the load in flight if it started before `now - bound`: resumes its worker
    /// with `.overdue`, cancels it, and returns its index.
    func expire(olderThan bound: Duration, now: ContinuousClock.Instant) -> Int? {
        let expired = state.withLock { watched -> (Int, CheckedContinuation<SoakOutcome, Never>, Task<Void, Never>?)? in
            guard let current = watched, now - current.started > bound, let continuation = current.continuation else {
                return nil
            }
            watched = nil
            return (current.index, continuation, current.task)
        }
        guard let (index, continuation, task) = expired else { return nil }
        task?.cancel()
        continuation.resume(returning: .overdue)
        return index
    }
}
