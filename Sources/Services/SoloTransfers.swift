internal import Synchronization

/// Transfers that no other load can join (coalescing off for the load): tracked under a lock
/// rather than on the coordinator actor, so such a load never waits for the actor's
/// isolation, neither to start nor to land. Each still runs in a task of its own so that
/// ``RequestCoordinator/shutdown(cancellingInFlight:)`` can cancel it and wait for it.
final class SoloTransfers: Sendable {
    typealias Work = @Sendable () async -> Result<TransportResponse, ServiceError>

    private struct State {
        var isShutDown = false
        var tasks: [UInt64: Task<Result<TransportResponse, ServiceError>, Never>] = [:]
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Runs `work` in its own task and waits for it; cancelling the caller cancels it. Fails
    /// with `shutDown` once the coordinator is shut down.
    func run(id: UInt64, _ work: @escaping Work) async -> Result<TransportResponse, ServiceError> {
        let task: Task<Result<TransportResponse, ServiceError>, Never>? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            let task = Task { await work() }
            state.tasks[id] = task
            return task
        }
        guard let task else { return .failure(ServiceError(.shutDown, "The coordinator was shut down.")) }
        let result = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        let waiters = state.withLock { state in
            state.tasks[id] = nil
            guard state.tasks.isEmpty else { return [CheckedContinuation<Void, Never>]() }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
        return result
    }

    /// Refuses new transfers; cancels those in flight when `cancelling`.
    func shutDown(cancelling: Bool) {
        let tasks = state.withLock { state in
            state.isShutDown = true
            return Array(state.tasks.values)
        }
        if cancelling { for task in tasks { task.cancel() } }
    }

    /// Returns once no transfer is in flight.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.tasks.isEmpty { return true }
                state.drainWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Transfers in flight right now.
    var count: Int { state.withLock { $0.tasks.count } }
}
