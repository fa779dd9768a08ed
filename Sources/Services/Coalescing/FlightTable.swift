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
    /// A waiting load's continuation: checked in debug builds (and so in tests and under the
    /// sanitizers), where a second resume traps; unchecked in release builds, where the checked
    /// one's canary costs an allocation per load (see PERFORMANCE.md). Each is resumed once, by
    /// whoever takes its `Waiting` entry out of the machine (land, leave, shutDown), or at once
    /// when the load is refused or leads, and is never kept otherwise.
    #if DEBUG
    typealias Waiter = CheckedContinuation<Outcome, Never>
    #else
    typealias Waiter = UnsafeContinuation<Outcome, Never>
    #endif

    /// What a waiting load is told.
    enum Outcome {
        /// The transfer landed.
        case landed(Result<Execution, ServiceError>)
        /// The load leads flight `serial` on its own task: it was admitted first, or its leader
        /// left and it takes over.
        case leads(serial: UInt64)
    }

    /// What the machine holds for this table.
    enum Tokens: FlightTokens {
        typealias Key = FlightKey
        typealias Waiter = FlightTable.Waiter
        typealias TaskHandle = Task<Void, Never>
        typealias Cancellation = TransferCancellation
        typealias Drainer = CheckedContinuation<Void, Never>
    }

    typealias Machine = FlightMachine<Tokens>

    /// The flights (``FlightMachine``), under a lock; every action it returns is performed after
    /// the lock is released.
    private let state = LockedValue(Machine())

    /// Waits for the transfer `key` identifies, joining one in flight or leading one: on this
    /// task when `cancellation` is given (the transport honours it), else in a task of its own;
    /// a nil key never joins. With `rejectsDuplicates`, a load that would join fails with
    /// `redundantRequest` instead. Fails with `shutDown` once the table is shut down. A waiter
    /// that is cancelled gets `cancelled` at once; `joined` runs when the load joins another's
    /// transfer. A load that joined leaves with `timedOut` at its `deadline` (a ``Deadline``,
    /// which the transfer it joined may not have).
    @inline(never)
    nonisolated(nonsending) func run(
        id: UInt64, key: FlightKey?, rejectsDuplicates: Bool, transportExecutor: (any TaskExecutor)?,
        reportsShutDown: Bool = false, cancellation: TransferCancellation? = nil,
        deadline: Moment? = nil, joined: () -> Void, _ work: @escaping Work
    ) async -> Result<Execution, ServiceError> {
        // Nothing to join: lead at once, with no continuation and no cancellation handler.
        if let cancellation {
            let admission = state.withLock {
                $0.admitLeader(id: id, key: key, cancellation: cancellation, taskIsCancelled: Task.isCancelled)
            }
            switch admission {
            case .leads: return await lead(id, work)
            case .refused(let error): return .failure(error)
            case .joins: break  // joins below, where its registration and admission share a lock
            }
        }
        // When the caller prefers the transport's executor, so does the transfer's task. Asked
        // before the cancellation handler is installed: with a handler, the runtime takes the
        // task's status lock to answer.
        let preferred =
            cancellation != nil
            ? nil
            : transportExecutor.flatMap { executor in
                withUnsafeCurrentTask { $0?.unownedTaskExecutor } == executor.asUnownedTaskExecutor() ? executor : nil
            }
        var timer: Task<Void, Never>?
        let outcome = await withTaskCancellationHandler {
            // Admission and the waiter's registration happen under one lock, so a transfer
            // that lands at once still finds every waiter it must answer.
            func admit(_ continuation: Waiter) {
                let admission = state.withLock {
                    $0.admit(
                        id: id, key: key, rejectsDuplicates: rejectsDuplicates, waiter: continuation,
                        reportsShutDown: reportsShutDown, cancellation: cancellation, taskIsCancelled: Task.isCancelled)
                }
                switch admission {
                case .refused(let error): continuation.resume(returning: .landed(.failure(error)))
                case .joined:
                    joined()
                    if let deadline { timer = expiry(of: id, at: deadline) }
                case .startTask: start(id, preferred: preferred, work)
                case .leadsInline: continuation.resume(returning: .leads(serial: id))
                }
            }
            #if DEBUG
            return await withCheckedContinuation(admit)
            #else
            return await withUnsafeContinuation(admit)
            #endif
        } onCancel: {
            leave(id)
        }
        timer?.cancel()
        switch outcome {
        case .landed(let result): return result
        case .leads(let serial): return await lead(serial, work)
        }
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
    private func landLed(_ serial: UInt64, result: Result<TransportResponse, ServiceError>) -> Result<
        Execution, ServiceError
    > {
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
        let cancelNow = state.withLock { $0.taskStarted(serial, task: task) }
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
        switch state.withLock({ $0.land(serial, handingOver: handingOver) }) {
        case .handedOver(let next):
            // Every joiner of a flight on its leader's task brings a cancellation (same
            // coordinator and transport; receivers and responders never join one), so shutdown
            // can still end the transfer it now runs.
            next.resume(returning: .leads(serial: serial))
            return nil
        case .landed(let first, let others, let shared, let drained):
            let decodes = shared ? SharedDecodes() : nil
            func answer(_ waiting: Machine.Waiting) {
                waiting.waiter.resume(
                    returning: .landed(
                        result.map { Execution(response: $0, sharedDecodes: decodes, wasCoalesced: waiting.coalesced) })
                )
            }
            if let first { answer(first) }
            for waiting in others { answer(waiting) }
            for drainer in drained { drainer.resume() }
            return decodes
        }
    }

    /// A cancelled load leaves at once (with `error`, `cancelled` unless its deadline passed);
    /// the last one out cancels the transfer.
    private func leave(_ id: UInt64, with error: @autoclosure () -> ServiceError = .cancelled()) {
        let (waiter, task) = state.withLock { $0.leave(id) }
        waiter?.resume(returning: .landed(.failure(error())))
        task?.cancel()
    }

    /// Makes joined load `id` leave with `timedOut` at `deadline`, unless cancelled first.
    private func expiry(of id: UInt64, at deadline: Moment) -> Task<Void, Never> {
        Task { [weak self] in
            try? await Task.sleep(until: deadline.instant, clock: .continuous)
            guard !Task.isCancelled else { return }
            self?.leave(
                id,
                with: ServiceError(
                    .timedOut, "The load reached its deadline while waiting for the identical transfer it joined."))
        }
    }

    /// Refuses new loads; when `cancelling`, cancels every transfer and fails its waiters.
    func shutDown(cancelling: Bool) {
        let actions = state.withLock { $0.shutDown(cancelling: cancelling) }
        for task in actions.tasksToCancel { task.cancel() }
        for cancellation in actions.cancellations { cancellation.cancel() }
        for waiting in actions.failed {
            let error =
                waiting.reportsShutDown
                ? ServiceError(.shutDown, "The coordinator shut down with the transfer in flight.") : .cancelled()
            waiting.waiter.resume(returning: .landed(.failure(error)))
        }
    }

    /// Returns once no transfer is running.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if state.withLock({ $0.waitForDrain(continuation) }) { continuation.resume() }
        }
    }

    /// Whether a load with `key` would join a flight now (or be refused as its duplicate).
    func isJoinable(_ key: FlightKey) -> Bool { state.withLock { $0.isJoinable(key) } }

    /// Loads waiting for transfers right now, leaders on their own task included.
    var waiterCount: Int { state.withLock { $0.waiterCount } }
}
