internal import CourierCore
internal import Synchronization

/// A store that reports events of its own (a disk or shared tier's evictions): a
/// ``TieredCache`` forwards them to its observers, and so to the coordinator's events.
package protocol CacheEventSource: Sendable {
    /// Where the store's events go.
    var observers: CacheObservers { get }
}

/// Handlers that want a cache's events. Any thread may add, remove or notify.
package final class CacheObservers: Sendable {
    private let handlers = LockedValue<[UInt64: @Sendable (CacheEvent) -> Void]>([:])
    private let nextID = Atomic<UInt64>(0)

    package init() {}

    /// Calls `handler` with every event from now on, until ``remove(_:)`` with the returned id.
    @discardableResult
    package func add(_ handler: @escaping @Sendable (CacheEvent) -> Void) -> UInt64 {
        let id = nextID.add(1, ordering: .relaxed).newValue
        handlers.withLock { $0[id] = handler }
        return id
    }

    /// Stops calling the handler `id`.
    package func remove(_ id: UInt64) { handlers.withLock { _ = $0.removeValue(forKey: id) } }

    /// Calls every handler with `event` (built only when one listens).
    package func notify(_ event: @autoclosure () -> CacheEvent) {
        let current = handlers.withLock { $0.isEmpty ? [] : Array($0.values) }
        guard !current.isEmpty else { return }
        let event = event()
        for handler in current { handler(event) }
    }
}
