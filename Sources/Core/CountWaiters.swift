/// Tasks waiting for a count to reach a threshold, each for a bounded time: the waits of the
/// test doubles and the test server ("until 3 requests arrived"), which must never hang a
/// test run when the count never gets there.
package final class CountWaiters: Sendable {
    private struct Waiter {
        let id: UInt64
        let threshold: Int
        let continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var count = 0
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
    }

    private let state = LockedValue(State())

    package init() {}

    /// The count now.
    package var count: Int { state.withLock { $0.count } }

    /// Adds `amount` to the count and wakes the waiters it satisfies.
    package func add(_ amount: Int = 1) {
        update { $0 += amount }
    }

    /// Sets the count (it may go down: requests held at a gate are released).
    package func set(_ count: Int) {
        update { $0 = count }
    }

    /// Returns true once the count is at least `threshold`, or false after `timeout`.
    @discardableResult
    package func wait(until threshold: Int, timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id: UInt64? = state.withLock { state in
                if state.count >= threshold { return nil }
                state.nextID += 1
                state.waiters.append(Waiter(id: state.nextID, threshold: threshold, continuation: continuation))
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            let timer = Task { [self] in
                try? await Task.sleep(for: timeout)
                expire(id)
            }
            let ended = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return true }
                state.waiters[index].timer = timer
                return false
            }
            if ended { timer.cancel() }
        }
    }

    private func update(_ change: (inout Int) -> Void) {
        let ready = state.withLock { state in
            change(&state.count)
            let count = state.count
            let ready = state.waiters.filter { $0.threshold <= count }
            state.waiters.removeAll { $0.threshold <= count }
            return ready
        }
        for waiter in ready {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: true)
        }
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state in
            state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(returning: false)
    }
}
