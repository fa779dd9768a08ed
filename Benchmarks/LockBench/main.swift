// Synchronization.Mutex against Courier's LockedValue (Sources/Core/LockedValue.swift, compiled
// into this program by scripts/lock-bench.sh), in one run: uncontended, and two threads taking
// the same lock. Prints nanoseconds per lock-and-unlock and the ratio.
internal import Dispatch
internal import Synchronization

#if canImport(Glibc)
internal import Glibc
#endif

func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Nanoseconds per operation of `body` run `count` times on each of `threads` threads.
func measure(threads: Int, count: Int, _ body: @escaping @Sendable () -> Void) -> Double {
    let start = now()
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        for _ in 0..<count { body() }
    }
    return Double(now() - start) / Double(count * threads)
}

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 5_000_000 : 5_000_000
final class Boxes: Sendable {
    let mutex = Mutex<Int>(0)
    let locked = LockedValue<Int>(0)
}
let boxes = Boxes()
print("lock and unlock, ns per operation (\(count) per thread, best of 5)")
print("threads  Mutex  LockedValue  ratio")
for threads in [1, 2] {
    var mutexBest = Double.infinity
    var lockedBest = Double.infinity
    for _ in 0..<5 {
        mutexBest = min(mutexBest, measure(threads: threads, count: count) { boxes.mutex.withLock { $0 &+= 1 } })
        lockedBest = min(lockedBest, measure(threads: threads, count: count) { boxes.locked.withLock { $0 &+= 1 } })
    }
    func fixed(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    print("\(threads)        \(fixed(mutexBest))   \(fixed(lockedBest))         \(fixed(lockedBest / mutexBest))x")
}
