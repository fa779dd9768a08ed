internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// Decoded values shared by the waiters of one transfer, one per resource type: the first
/// waiter to ask decodes, the others await its result.
final class SharedDecodes: Sendable {
    private let values = LockedValue<[ObjectIdentifier: Task<any Sendable, any Error>]>([:])

    func value<T: Sendable>(
        for type: (some Resource).Type, decode: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let task = values.withLock { values in
            if let existing = values[ObjectIdentifier(type)] { return existing }
            let task = Task<any Sendable, any Error> { try decode() }
            values[ObjectIdentifier(type)] = task
            return task
        }
        // The stored task only ever produces a `T` for this resource type.
        return try await task.value as! T
    }
}

extension RequestCoordinator {
    /// Runs `work` in a task of its own that shutdown waits for (never once shut down).
    nonisolated static func startBackground(
        on coordinator: RequestCoordinator, _ work: @escaping @Sendable (RequestCoordinator) async -> Void
    ) {
        Task {
            guard await coordinator.beginBackgroundWork() else { return }
            await work(coordinator)
            await coordinator.endBackgroundWork()
        }
    }

    private func beginBackgroundWork() -> Bool {
        guard !isShutDown else { return false }
        activeTransfers += 1
        return true
    }

    private func endBackgroundWork() {
        activeTransfers -= 1
        resumeDrainWaitersIfIdle()
    }

    func resumeDrainWaitersIfIdle() {
        guard activeTransfers == 0 else { return }
        let drained = drainWaiters
        drainWaiters = []
        for waiter in drained { waiter.resume() }
    }

    /// Loads waiting for transfers, or for their turn at their host, right now.
    var waiterCount: Int { flights.waiterCount + (hostQueue?.waiterCount ?? 0) }

    /// Returns true once at least `count` loads wait for transfers, false after a minute (a
    /// test hook). Transfers start without the actor, so this checks every millisecond.
    @discardableResult
    func waitForWaiters(_ count: Int) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while waiterCount < count, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
        return waiterCount >= count
    }
}
