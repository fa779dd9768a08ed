// What every fuzz target shares: invariant checks that keep their message in release builds
// (`precondition` drops it under -O), and a way to run async code from libFuzzer's callback.
import Dispatch
import Synchronization

/// Traps with `message` (kept in -O builds, printed before libFuzzer's report) unless `condition`.
@inline(__always)
public func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz invariant: \(message())") }
}

/// Runs `body` to completion from libFuzzer's synchronous callback.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}
