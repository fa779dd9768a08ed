internal import CourierCore
public import Dispatch
public import Logging

/// A load in progress, for code that is not async: register callbacks, cancel it.
///
/// ```swift
/// let handle = UserService(id: 7).loading()
///     .onSuccess { user in print(user.name) }
///     .onFailure { error in print(error.code, error.message) }
/// // later, if the screen or command goes away:
/// handle.cancel()
/// ```
///
/// Built on the async ``Resource/load(using:logger:)``: same coordinator, cache, retries and
/// errors. Each callback runs once: when the load ends, or at once when it is registered after
/// that. After ``cancel()`` no callback runs. Callbacks run on `callbackQueue` when given,
/// otherwise on whatever thread finished the load.
public final class LoadHandle<Value: Sendable>: Sendable {
    private enum Callback {
        case success(@Sendable (Value) -> Void)
        case failure(@Sendable (ServiceError) -> Void)
        case completion(@Sendable (Result<Value, ServiceError>) -> Void)
    }

    private struct State {
        var result: Result<Value, ServiceError>?
        var callbacks: [Callback] = []
        var cancelled = false
        var task: Task<Void, Never>?
    }

    private let state = LockedValue(State())
    private let queue: DispatchQueue?

    init(queue: DispatchQueue?, operation: @escaping @Sendable () async throws -> Value) {
        self.queue = queue
        // The task keeps the handle alive until the load ends, so a chain nobody stores still
        // delivers its callbacks; `finish` drops the task, ending the cycle.
        let task = Task { [self] in
            let result: Result<Value, ServiceError>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(ServiceError.wrapping(error))
            }
            self.finish(result)
        }
        state.withLock { $0.task = task }
    }

    /// Calls `handler` with the value when the load succeeds.
    @discardableResult
    public func onSuccess(_ handler: @escaping @Sendable (Value) -> Void) -> LoadHandle {
        add(.success(handler))
    }

    /// Calls `handler` with the error when the load fails.
    @discardableResult
    public func onFailure(_ handler: @escaping @Sendable (ServiceError) -> Void) -> LoadHandle {
        add(.failure(handler))
    }

    /// Calls `handler` with the outcome, whichever it is.
    @discardableResult
    public func onCompletion(_ handler: @escaping @Sendable (Result<Value, ServiceError>) -> Void) -> LoadHandle {
        add(.completion(handler))
    }

    /// Cancels the load; no callback runs after this returns.
    public func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            state.callbacks = []
            return state.task
        }
        task?.cancel()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// The outcome, once the load ended (nil before, and after a cancel that came first).
    public var result: Result<Value, ServiceError>? { state.withLock { $0.cancelled ? nil : $0.result } }

    private func add(_ callback: Callback) -> LoadHandle {
        let ready: Result<Value, ServiceError>? = state.withLock { state in
            if state.cancelled { return nil }
            if let result = state.result { return result }
            state.callbacks.append(callback)
            return nil
        }
        if let ready { deliver([callback], ready) }
        return self
    }

    private func finish(_ result: Result<Value, ServiceError>) {
        let callbacks: [Callback] = state.withLock { state in
            state.result = result
            state.task = nil
            defer { state.callbacks = [] }
            return state.cancelled ? [] : state.callbacks
        }
        deliver(callbacks, result)
    }

    private func deliver(_ callbacks: [Callback], _ result: Result<Value, ServiceError>) {
        guard !callbacks.isEmpty else { return }
        let run: @Sendable () -> Void = { [self] in
            for callback in callbacks {
                if isCancelled { return }
                switch (callback, result) {
                case (.success(let handler), .success(let value)): handler(value)
                case (.failure(let handler), .failure(let error)): handler(error)
                case (.completion(let handler), _): handler(result)
                default: break
                }
            }
        }
        if let queue { queue.async(execute: run) } else { run() }
    }
}

extension Resource {
    /// Starts loading this resource and returns a handle for callbacks and cancellation, for
    /// code that is not async (see ``LoadHandle``). Async code uses ``load(using:logger:)``.
    public func loading(
        using coordinator: RequestCoordinator = .current, logger: Logger? = nil, callbackQueue: DispatchQueue? = nil
    ) -> LoadHandle<Response> {
        LoadHandle(queue: callbackQueue) { try await self.load(using: coordinator, logger: logger) }
    }
}
