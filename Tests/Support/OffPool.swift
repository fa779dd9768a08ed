import Foundation

/// Runs `body`, which blocks (waits for a child process, reads a pipe, sleeps between polls),
/// on a thread of its own and returns its result.
///
/// Tests share Swift's cooperative pool, which has one thread per core: two tests blocking
/// two of its threads for a minute (a memory probe under ThreadSanitizer, say) stall every
/// other test on a 2-core machine for that minute, and their timeouts then fail tests that
/// did nothing wrong. Blocking work therefore never runs on the pool.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
