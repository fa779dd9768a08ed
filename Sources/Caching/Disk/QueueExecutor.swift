internal import CourierCore
internal import Dispatch
internal import Synchronization

/// A serial executor running jobs on its own dispatch queue, so that an actor using it may block
/// on file I/O without holding one of the cooperative pool's few threads (one per core).
final class QueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

/// Handlers that want a cache's events. Any thread may add, remove or notify.
package final class CacheObservers: Sendable {
    private let handlers = LockedValue<[UInt64: @Sendable (CacheEvent) -> Void]>([:])
    private let nextID = Atomic<UInt64>(0)

    init() {}

    /// Calls `handler` with every event from now on, until ``remove(_:)`` with the returned id.
    @discardableResult
    package func add(_ handler: @escaping @Sendable (CacheEvent) -> Void) -> UInt64 {
        let id = nextID.add(1, ordering: .relaxed).newValue
        handlers.withLock { $0[id] = handler }
        return id
    }

    /// Stops calling the handler `id`.
    package func remove(_ id: UInt64) { handlers.withLock { _ = $0.removeValue(forKey: id) } }

    func notify(_ event: @autoclosure () -> CacheEvent) {
        let current = handlers.withLock { $0.isEmpty ? [] : Array($0.values) }
        guard !current.isEmpty else { return }
        let event = event()
        for handler in current { handler(event) }
    }
}
