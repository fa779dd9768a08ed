internal import CourierCore

/// Background work (refreshes, streamed bodies) that shutdown waits for, and the test hook
/// that waits for loads to be waiting.
extension RequestCoordinator {
    /// Runs `work` in a task of its own that shutdown waits for (never once shut down), without
    /// the deadline of the load that started it: a refresh nobody waits for is not cut short
    /// by its caller's ``Deadline`` (the coordinator's load budget still bounds its loads).
    nonisolated static func startBackground(
        on coordinator: RequestCoordinator, _ work: @escaping @Sendable (RequestCoordinator) async -> Void
    ) {
        Task {
            guard await coordinator.beginBackgroundWork() else { return }
            await Deadline.$storage.withValue(nil) { await work(coordinator) }
            await coordinator.endBackgroundWork()
        }
    }

    private func beginBackgroundWork() -> Bool {
        guard !isShutDown else { return false }
        backgroundWork += 1
        return true
    }

    private func endBackgroundWork() {
        backgroundWork -= 1
        resumeDrainWaitersIfIdle()
    }

    func resumeDrainWaitersIfIdle() {
        guard backgroundWork == 0 else { return }
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
