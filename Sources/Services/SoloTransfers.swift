internal import CourierCore

/// Transfers that no other load can join (coalescing off for the load): tracked under a lock
/// rather than on the coordinator actor, so such a load never waits for the actor's
/// isolation, neither to start nor to land. Each still runs in a task of its own so that
/// ``RequestCoordinator/shutdown(cancellingInFlight:)`` can cancel it and wait for it.
final class SoloTransfers: Sendable {
    typealias Work = @Sendable () async -> Result<TransportResponse, ServiceError>

    private struct State {
        var isShutDown = false
        var cancelsInFlight = false
        /// In flight, by load id; `nil` while the load's task is being created.
        var tasks: [UInt64: Task<Result<TransportResponse, ServiceError>, Never>?] = [:]
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    /// Runs `work` in its own task and waits for it; cancelling the caller cancels it. Fails
    /// with `shutDown` once the coordinator is shut down. When the caller prefers the
    /// transport's executor, so does the task.
    ///
    /// The task starts immediately on the caller's thread and runs until its transfer
    /// suspends, so starting a load wakes no other thread.
    func run(id: UInt64, transportExecutor: (any TaskExecutor)?, _ work: @escaping Work) async
        -> Result<TransportResponse, ServiceError>
    {
        let admitted = state.withLock { state in
            guard !state.isShutDown else { return false }
            state.tasks[id] = .some(nil)
            return true
        }
        guard admitted else { return .failure(ServiceError(.shutDown, "The coordinator was shut down.")) }
        var preferred: (any TaskExecutor)?
        if let transportExecutor,
            withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor }) == transportExecutor.asUnownedTaskExecutor()
        {
            preferred = transportExecutor
        }
        let task = Task.immediate(executorPreference: preferred) { await work() }
        let cancelNow = state.withLock { state in
            state.tasks[id] = task
            return state.cancelsInFlight
        }
        if cancelNow { task.cancel() }  // shutdown came while the task was being created
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
            if cancelling { state.cancelsInFlight = true }
            return state.tasks.values.compactMap { $0 }
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
