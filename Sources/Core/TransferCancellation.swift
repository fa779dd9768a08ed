/// Cancels one transfer from outside the task that runs it.
///
/// A load that leads its transfer runs it on its own task (no task of its own for the
/// transfer), so `RequestCoordinator.shutdown(cancellingInFlight:)` cannot cancel a task to end
/// it: it cancels the transfer's ``TransferOptions/cancellation`` instead. A transport that
/// conforms to ``HonoursTransferCancellation`` treats ``cancel()`` exactly as it treats the
/// cancellation of the task that sent the request; with any other transport, the coordinator
/// runs the transfer in a task it can cancel.
///
/// One wait registers at a time (the hops and attempts of a transfer run one after another).
/// Copies share one state (one allocation: the lock's), so a copy cancels the original.
package struct TransferCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var handler: (@Sendable () -> Void)?
    }

    private let state = LockedValue(State())

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Cancels: runs the registered handler, if any, once. Later registrations run at once.
    package func cancel() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isCancelled else { return nil }
            state.isCancelled = true
            defer { state.handler = nil }
            return state.handler
        }
        handler?()
    }

    /// Registers what cancels the current wait, replacing any earlier registration; runs it at
    /// once (on this thread, before returning) when already cancelled.
    package func register(_ handler: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { state -> Bool in
            if state.isCancelled { return true }
            state.handler = handler
            return false
        }
        if cancelled { handler() }
    }

    /// Ends the current wait's registration (its handler is released, never run).
    package func unregister() {
        state.withLock { $0.handler = nil }
    }

    /// Runs `operation` in a task of its own, which `cancel()` or the cancellation of the
    /// calling task cancels: how a wait that knows only task cancellation (a clock's sleep, a
    /// test double's handler) honours this one too.
    package func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await operation() }
        register { task.cancel() }
        defer { unregister() }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}

/// A transport that ends a transfer when its ``TransferOptions/cancellation`` is cancelled,
/// as promptly as when the task that sent it is cancelled: in a wait for a connection, while
/// it is sent or received, and between hops (a streamed transfer until its head: the
/// coordinator gives a cancellation only to transfers it receives whole). The coordinator then
/// lets a load run its transfer on its own task.
package protocol HonoursTransferCancellation: HTTPTransport {}
