internal import CourierCore

/// Every transfer in flight and the loads waiting for it, kept under a lock rather than on the
/// coordinator actor: a load never waits for the actor's isolation, neither to start nor to
/// land, and coalescing costs one dictionary lookup when nobody joins.
///
/// Each transfer runs in a task of its own, started at once on the caller's thread (starting a
/// load wakes no other thread), so that a cancelled waiter leaves at once while the others keep
/// the transfer, the last one out cancels it, and ``RequestCoordinator/shutdown(cancellingInFlight:)``
/// can cancel it and wait for it.
final class FlightTable: Sendable {
    typealias Work = nonisolated(nonsending) @Sendable () async -> Result<TransportResponse, ServiceError>
    typealias Waiter = UnsafeContinuation<Result<Execution, ServiceError>, Never>

    /// One transfer, named by the id of the load that started it.
    private struct Flight {
        /// What others join it by (nil: nobody can).
        var key: FlightKey?
        /// `nil` while the task is being created.
        var task: Task<Void, Never>?
        /// Loads that joined after the first (allocated only when someone joins).
        var joiners: [UInt64] = []
        /// Loads waiting right now.
        var waiting = 1
        /// Set once its last waiter left, or shutdown cancelled it.
        var isCancelled = false
    }

    /// A load waiting for a flight.
    private struct Waiting {
        var flight: UInt64
        var continuation: Waiter
        var coalesced: Bool
        /// Whether shutdown fails it with `shutDown` rather than `cancelled` (transfers to a
        /// file or a reader, which end because the coordinator stopped, not their caller).
        var reportsShutDown = false
    }

    private struct State {
        var isShutDown = false
        var cancelsInFlight = false
        /// Flights whose task has not ended yet (cancelled ones included).
        var flights: [UInt64: Flight] = [:]
        /// Flights a new load may still join.
        var joinable: [FlightKey: UInt64] = [:]
        /// Waiting loads, by load id.
        var waiting: [UInt64: Waiting] = [:]
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private enum Admission {
        case refused(ServiceError)
        case joined
        case leads
    }

    private let state = LockedValue(State())

    /// Waits for the transfer `key` identifies, joining one in flight or starting `work` in a
    /// task of its own; a nil key never joins. With `rejectsDuplicates`, a load that would join
    /// fails with `redundantRequest` instead. Fails with `shutDown` once the table is shut down.
    /// A waiter that is cancelled gets `cancelled` at once; the transfer is cancelled when its
    /// last waiter leaves. `joined` runs when the load joins another's transfer.
    nonisolated(nonsending) func run(
        id: UInt64, key: FlightKey?, rejectsDuplicates: Bool, transportExecutor: (any TaskExecutor)?,
        reportsShutDown: Bool = false, joined: () -> Void, _ work: @escaping Work
    ) async -> Result<Execution, ServiceError> {
        // When the caller prefers the transport's executor, so does the transfer's task. Asked
        // before the cancellation handler is installed: with a handler, the runtime takes the
        // task's status lock to answer.
        let preferred = transportExecutor.flatMap { executor in
            withUnsafeCurrentTask { $0?.unownedTaskExecutor } == executor.asUnownedTaskExecutor() ? executor : nil
        }
        return await withTaskCancellationHandler {
            // Unsafe (no checking canary to allocate): each continuation is resumed once, by
            // whoever removes its `Waiting` entry under the lock (land, leave or shutDown), or at
            // once when the load is refused and never stored.
            await withUnsafeContinuation { (continuation: Waiter) in
                // Admission and the waiter's registration happen under one lock, so a transfer
                // that lands at once still finds every waiter it must answer.
                let admission = state.withLock { state -> Admission in
                    if state.isShutDown { return .refused(ServiceError(.shutDown, "The coordinator was shut down.")) }
                    if Task.isCancelled { return .refused(.cancelled()) }
                    if let key, let serial = state.joinable[key] {
                        if rejectsDuplicates {
                            return .refused(
                                ServiceError(
                                    .redundantRequest, "An identical request is in flight and duplicates are rejected."))
                        }
                        state.flights[serial]?.joiners.append(id)
                        state.flights[serial]?.waiting += 1
                        state.waiting[id] = Waiting(flight: serial, continuation: continuation, coalesced: true)
                        return .joined
                    }
                    state.flights[id] = Flight(key: key)
                    if let key { state.joinable[key] = id }
                    state.waiting[id] = Waiting(
                        flight: id, continuation: continuation, coalesced: false, reportsShutDown: reportsShutDown)
                    return .leads
                }
                switch admission {
                case .refused(let error): continuation.resume(returning: .failure(error))
                case .joined: joined()
                case .leads: start(id, preferred: preferred, work)
                }
            }
        } onCancel: {
            leave(id)
        }
    }

    /// Starts flight `serial`'s task; it runs on this thread until its transfer first suspends,
    /// on `preferred` when given.
    private func start(_ serial: UInt64, preferred: (any TaskExecutor)?, _ work: @escaping Work) {
        // Without a preference, no preference at all. (An immediate task still carries a
        // preference record, so each resume of it reads the task's status under a lock; a
        // plain `Task` would not, but would start on another thread, and at c=1 that hop
        // costs more than the lock.) Each branch's closure is the task's only context.
        let task =
            if let preferred {
                Task.immediate(executorPreference: preferred) { self.land(serial, result: await work()) }
            } else {
                Task.immediate { self.land(serial, result: await work()) }
            }
        let cancelNow = state.withLock { state -> Bool in
            // Read and written back whole: an optional-chained write through the subscript
            // allocates a coroutine frame for a value this large.
            guard var flight = state.flights[serial] else { return false }  // already landed
            flight.task = task
            state.flights[serial] = flight
            return state.cancelsInFlight || flight.isCancelled
        }
        if cancelNow { task.cancel() }  // cancelled while the task was being created
    }

    /// Hands flight `serial`'s result to every load still waiting for it.
    private func land(_ serial: UInt64, result: Result<TransportResponse, ServiceError>) {
        var first: Waiting?
        var others: [Waiting] = []
        var shared = false
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard let flight = state.flights.removeValue(forKey: serial) else { return [] }
            if let key = flight.key { Self.removeJoinable(key, of: serial, from: &state) }
            shared = !flight.joiners.isEmpty
            if let waiting = state.waiting[serial], waiting.flight == serial {
                first = state.waiting.removeValue(forKey: serial)
            }
            for id in flight.joiners {
                if let waiting = state.waiting[id], waiting.flight == serial {
                    state.waiting[id] = nil
                    others.append(waiting)
                }
            }
            guard state.flights.isEmpty else { return [] }
            defer { state.drainWaiters = [] }
            return state.drainWaiters
        }
        let decodes = shared ? SharedDecodes() : nil
        func answer(_ waiting: Waiting) {
            waiting.continuation.resume(
                returning: result.map { Execution(response: $0, sharedDecodes: decodes, wasCoalesced: waiting.coalesced) })
        }
        if let first { answer(first) }
        for waiting in others { answer(waiting) }
        for waiter in drained { waiter.resume() }
    }

    /// Makes flight `serial` no longer joinable by `key`, unless another flight took the key.
    /// One lookup: comparing two keys in full costs more than hashing one.
    private static func removeJoinable(_ key: FlightKey, of serial: UInt64, from state: inout State) {
        guard let index = state.joinable.index(forKey: key), state.joinable.values[index] == serial else { return }
        state.joinable.remove(at: index)
    }

    /// A cancelled load leaves at once; the last one out cancels the transfer.
    private func leave(_ id: UInt64) {
        let (waiting, task) = state.withLock { state -> (Waiting?, Task<Void, Never>?) in
            guard let waiting = state.waiting.removeValue(forKey: id), var flight = state.flights[waiting.flight]
            else { return (nil, nil) }
            flight.waiting -= 1
            var task: Task<Void, Never>?
            if flight.waiting == 0 {
                flight.isCancelled = true
                task = flight.task
                if let key = flight.key { Self.removeJoinable(key, of: waiting.flight, from: &state) }
            }
            state.flights[waiting.flight] = flight
            return (waiting, task)
        }
        waiting?.continuation.resume(returning: .failure(.cancelled()))
        task?.cancel()
    }

    /// Refuses new loads; when `cancelling`, cancels every transfer and fails its waiters.
    func shutDown(cancelling: Bool) {
        let (waiters, tasks) = state.withLock { state -> ([Waiting], [Task<Void, Never>]) in
            state.isShutDown = true
            guard cancelling else { return ([], []) }
            state.cancelsInFlight = true
            let waiters = Array(state.waiting.values)
            state.waiting = [:]
            state.joinable = [:]
            var tasks: [Task<Void, Never>] = []
            for serial in state.flights.keys {
                state.flights[serial]?.waiting = 0
                state.flights[serial]?.isCancelled = true
                if let task = state.flights[serial]?.task { tasks.append(task) }
            }
            return (waiters, tasks)
        }
        for task in tasks { task.cancel() }
        for waiting in waiters {
            let error = waiting.reportsShutDown
                ? ServiceError(.shutDown, "The coordinator shut down with the transfer in flight.") : .cancelled()
            waiting.continuation.resume(returning: .failure(error))
        }
    }

    /// Returns once no transfer's task is running.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.flights.isEmpty { return true }
                state.drainWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Loads waiting for transfers right now.
    var waiterCount: Int { state.withLock { $0.waiting.count } }
}
