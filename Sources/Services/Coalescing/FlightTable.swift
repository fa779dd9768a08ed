internal import CourierCore

/// Every transfer in flight and the loads waiting for it, kept under a lock rather than on the
/// coordinator actor: a load never waits for the actor's isolation, neither to start nor to
/// land, and coalescing costs one dictionary lookup when nobody joins.
///
/// Two ways to run a transfer:
/// - **On the leader's task** when the load brings a ``TransferCancellation`` (its transport
///   honours one): no task, no thread to wake, no task allocator to fill. The leader's own
///   cancellation cancels the transfer; when loads joined it, the first still waiting takes
///   over with a transfer of its own, so a joined load never fails because another left.
///   ``RequestCoordinator/shutdown(cancellingInFlight:)`` cancels it through the cancellation.
/// - **In a task of its own** otherwise (any transport, a receiver, a responder), started at
///   once on the caller's thread (starting a load wakes no other thread): a cancelled waiter
///   leaves at once while the others keep the transfer, the last one out cancels it, and
///   shutdown can cancel it and wait for it.
final class FlightTable: Sendable {
    typealias Work = nonisolated(nonsending) @Sendable () async -> Result<TransportResponse, ServiceError>
    typealias Waiter = UnsafeContinuation<Outcome, Never>

    /// What a waiting load is told.
    enum Outcome {
        /// The transfer landed.
        case landed(Result<Execution, ServiceError>)
        /// The load leads flight `serial` on its own task: it was admitted first, or its leader
        /// left and it takes over.
        case leads(serial: UInt64)
    }

    /// One transfer, named by the id of the load that started it.
    private struct Flight {
        /// What others join it by (nil: nobody can).
        var key: FlightKey?
        /// `nil` while the task is being created, and for a transfer on its leader's task.
        var task: Task<Void, Never>?
        /// What cancels a transfer that runs on its leader's task.
        var cancellation: TransferCancellation?
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
        /// How the load would cancel a transfer it leads (nil: it cannot lead on its task).
        var cancellation: TransferCancellation?
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
        case leadsInline
    }

    private let state = LockedValue(State())

    /// Waits for the transfer `key` identifies, joining one in flight or leading one: on this
    /// task when `cancellation` is given (the transport honours it), else in a task of its own;
    /// a nil key never joins. With `rejectsDuplicates`, a load that would join fails with
    /// `redundantRequest` instead. Fails with `shutDown` once the table is shut down. A waiter
    /// that is cancelled gets `cancelled` at once; `joined` runs when the load joins another's
    /// transfer.
    @inline(never)
    nonisolated(nonsending) func run(
        id: UInt64, key: FlightKey?, rejectsDuplicates: Bool, transportExecutor: (any TaskExecutor)?,
        reportsShutDown: Bool = false, cancellation: TransferCancellation? = nil, joined: () -> Void,
        _ work: @escaping Work
    ) async -> Result<Execution, ServiceError> {
        // Nothing to join: lead at once, with no continuation and no cancellation handler.
        if let cancellation {
            switch admitLeader(id: id, key: key, cancellation: cancellation) {
            case .leads: return await lead(id, work)
            case .refused(let error): return .failure(error)
            case .joins: break  // joins below, where its registration and admission share a lock
            }
        }
        // When the caller prefers the transport's executor, so does the transfer's task. Asked
        // before the cancellation handler is installed: with a handler, the runtime takes the
        // task's status lock to answer.
        let preferred = cancellation != nil ? nil : transportExecutor.flatMap { executor in
            withUnsafeCurrentTask { $0?.unownedTaskExecutor } == executor.asUnownedTaskExecutor() ? executor : nil
        }
        let outcome = await withTaskCancellationHandler {
            // Unsafe (no checking canary to allocate): each continuation is resumed once, by
            // whoever removes its `Waiting` entry under the lock (land, leave or shutDown), or
            // at once when the load is refused or leads, and is never stored.
            await withUnsafeContinuation { (continuation: Waiter) in
                // Admission and the waiter's registration happen under one lock, so a transfer
                // that lands at once still finds every waiter it must answer.
                let admission = state.withLock { state -> Admission in
                    if let refusal = Self.refusal(in: state) { return .refused(refusal) }
                    if let key, let serial = state.joinable[key] {
                        if rejectsDuplicates {
                            return .refused(
                                ServiceError(
                                    .redundantRequest, "An identical request is in flight and duplicates are rejected."))
                        }
                        state.flights[serial]?.joiners.append(id)
                        state.flights[serial]?.waiting += 1
                        state.waiting[id] = Waiting(
                            flight: serial, continuation: continuation, coalesced: true, cancellation: cancellation)
                        return .joined
                    }
                    Self.register(id, key: key, cancellation: cancellation, in: &state)
                    // A leader on its own task waits for nothing: no `Waiting` entry.
                    if cancellation != nil { return .leadsInline }
                    state.waiting[id] = Waiting(
                        flight: id, continuation: continuation, coalesced: false, reportsShutDown: reportsShutDown)
                    return .leads
                }
                switch admission {
                case .refused(let error): continuation.resume(returning: .landed(.failure(error)))
                case .joined: joined()
                case .leads: start(id, preferred: preferred, work)
                case .leadsInline: continuation.resume(returning: .leads(serial: id))
                }
            }
        } onCancel: {
            leave(id)
        }
        switch outcome {
        case .landed(let result): return result
        case .leads(let serial): return await lead(serial, work)
        }
    }

    private enum LeaderAdmission {
        case refused(ServiceError)
        case joins
        case leads
    }

    /// Registers flight `id`, led on its caller's task, unless a flight for `key` is in flight
    /// (the load joins or is refused as a duplicate: ``run`` decides, under its lock).
    private func admitLeader(id: UInt64, key: FlightKey?, cancellation: TransferCancellation) -> LeaderAdmission {
        state.withLock { state in
            if let refusal = Self.refusal(in: state) { return .refused(refusal) }
            if let key, state.joinable[key] != nil { return .joins }
            Self.register(id, key: key, cancellation: cancellation, in: &state)
            return .leads
        }
    }

    /// Why a load is refused before it joins or leads: the table shut down, or its task was
    /// cancelled.
    private static func refusal(in state: State) -> ServiceError? {
        if state.isShutDown { return .coordinatorShutDown }
        if Task.isCancelled { return .cancelled() }
        return nil
    }

    /// Registers flight `id`, joinable by `key`.
    private static func register(
        _ id: UInt64, key: FlightKey?, cancellation: TransferCancellation?, in state: inout State
    ) {
        state.flights[id] = Flight(key: key, cancellation: cancellation)
        if let key { state.joinable[key] = id }
    }

    /// Runs flight `serial`'s transfer on this task and answers the loads that joined it. When
    /// this task's cancellation ended the transfer, the first load still waiting takes the
    /// flight over instead, with a transfer of its own.
    ///
    /// Not inlined, and what follows the transfer is synchronous: this frame, held for the
    /// whole transfer, keeps little more than the transfer's result.
    @inline(never)
    private nonisolated(nonsending) func lead(_ serial: UInt64, _ work: Work) async -> Result<Execution, ServiceError> {
        landLed(serial, result: await work())
    }

    /// Lands flight `serial`, led on this task, with its transfer's `result`, or hands it over.
    @inline(never)
    private func landLed(_ serial: UInt64, result: Result<TransportResponse, ServiceError>) -> Result<Execution, ServiceError> {
        var leaderLeft = false
        if Task.isCancelled, case .failure(let error) = result, error.code == .cancelled { leaderLeft = true }
        // Handed over, the result is this load's cancellation, which shares nothing.
        let decodes = land(serial, result: result, handingOver: leaderLeft)
        return result.map { Execution(response: $0, sharedDecodes: decodes, wasCoalesced: false) }
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
                Task.immediate(executorPreference: preferred) { _ = self.land(serial, result: await work()) }
            } else {
                Task.immediate { _ = self.land(serial, result: await work()) }
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

    /// Hands flight `serial`'s result to every load still waiting for it; returns the decodes
    /// they share (nil when nobody joined), for a leader on its own task to share too.
    ///
    /// `handingOver` (its leader left, cancelled): the first load still waiting, if any, takes
    /// the flight over instead, unless shutdown cancelled it. Decided under the same lock as
    /// the landing, so a load that joins meanwhile is either handed the flight or answered.
    @discardableResult
    private func land(
        _ serial: UInt64, result: Result<TransportResponse, ServiceError>, handingOver: Bool = false
    ) -> SharedDecodes? {
        var first: Waiting?
        var others: [Waiting] = []
        var shared = false
        var next: Waiting?
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if handingOver, !state.cancelsInFlight, var flight = state.flights[serial] {
                while !flight.joiners.isEmpty {
                    let id = flight.joiners.removeFirst()
                    guard let waiting = state.waiting[id], waiting.flight == serial else { continue }
                    state.waiting[id] = nil
                    flight.waiting -= 1  // the leader that left; the next was counted when it joined
                    flight.cancellation = waiting.cancellation
                    state.flights[serial] = flight
                    next = waiting
                    return []
                }
            }
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
        if let next {
            // Every joiner of a flight on its leader's task brings a cancellation (same
            // coordinator and transport; receivers and responders never join one), so shutdown
            // can still end the transfer it now runs.
            next.continuation.resume(returning: .leads(serial: serial))
            return nil
        }
        let decodes = shared ? SharedDecodes() : nil
        func answer(_ waiting: Waiting) {
            waiting.continuation.resume(
                returning: .landed(
                    result.map { Execution(response: $0, sharedDecodes: decodes, wasCoalesced: waiting.coalesced) }))
        }
        if let first { answer(first) }
        for waiting in others { answer(waiting) }
        for waiter in drained { waiter.resume() }
        return decodes
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
        waiting?.continuation.resume(returning: .landed(.failure(.cancelled())))
        task?.cancel()
    }

    /// Refuses new loads; when `cancelling`, cancels every transfer and fails its waiters.
    func shutDown(cancelling: Bool) {
        let (waiters, tasks, cancellations) = state.withLock {
            state -> ([Waiting], [Task<Void, Never>], [TransferCancellation]) in
            state.isShutDown = true
            guard cancelling else { return ([], [], []) }
            state.cancelsInFlight = true
            let waiters = Array(state.waiting.values)
            state.waiting = [:]
            state.joinable = [:]
            var tasks: [Task<Void, Never>] = []
            var cancellations: [TransferCancellation] = []
            for serial in state.flights.keys {
                state.flights[serial]?.waiting = 0
                state.flights[serial]?.isCancelled = true
                if let task = state.flights[serial]?.task { tasks.append(task) }
                if let cancellation = state.flights[serial]?.cancellation { cancellations.append(cancellation) }
            }
            return (waiters, tasks, cancellations)
        }
        for task in tasks { task.cancel() }
        for cancellation in cancellations { cancellation.cancel() }
        for waiting in waiters {
            let error = waiting.reportsShutDown
                ? ServiceError(.shutDown, "The coordinator shut down with the transfer in flight.") : .cancelled()
            waiting.continuation.resume(returning: .landed(.failure(error)))
        }
    }

    /// Returns once no transfer is running.
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

    /// Whether a load with `key` would join a flight now (or be refused as its duplicate).
    func isJoinable(_ key: FlightKey) -> Bool {
        state.withLock { state in state.joinable[key] != nil }
    }

    /// Loads waiting for transfers right now, leaders on their own task included.
    var waiterCount: Int {
        state.withLock { state in state.waiting.count + state.flights.values.count { $0.cancellation != nil } }
    }
}
