#if PostgreSQL
internal import CourierCore

/// Runs a database call with a time limit that holds even when the call does not listen to
/// cancellation (a query already sent to a server that stopped answering).
///
/// The call runs in a task of its own; the caller gets its result or, after the limit, a
/// `timedOut` error while the task is cancelled (a connection request leaves the pool's queue
/// at once; a query in flight finishes or fails in the background).
enum CallDeadline {
    static func run<T: Sendable>(
        _ operation: String, limit: Duration, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Outcome<T>()
        let worker = Task {
            do { outcome.resume(with: .success(try await work())) } catch { outcome.resume(with: .failure(error)) }
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            outcome.resume(
                with: .failure(
                    ServiceError(.timedOut, "The PostgreSQL cache did not finish \(operation) within \(limit).")))
        }
        defer {
            timer.cancel()
            worker.cancel()
        }
        return try await withTaskCancellationHandler {
            try await outcome.value()
        } onCancel: {
            outcome.resume(with: .failure(ServiceError.cancelled("The cache call was cancelled.")))
        }
    }
}

/// The first result wins; the waiter is resumed exactly once, whether the result comes before
/// or after it starts waiting.
private final class Outcome<T: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<T, any Error>)
        case done(Result<T, any Error>)
        case delivered
    }

    private let state = LockedValue<State>(.empty)

    func resume(with result: Result<T, any Error>) {
        let waiter: CheckedContinuation<T, any Error>? = state.withLock { state in
            switch state {
            case .empty:
                state = .done(result)
                return nil
            case .waiting(let continuation):
                state = .delivered
                return continuation
            case .done, .delivered:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<T, any Error>? = state.withLock { state in
                switch state {
                case .empty:
                    state = .waiting(continuation)
                    return nil
                case .done(let result):
                    state = .delivered
                    return result
                case .waiting, .delivered:
                    preconditionFailure("invalid state: a second waiter")
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
#endif
