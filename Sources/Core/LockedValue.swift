#if canImport(Glibc)
package import Glibc
#elseif canImport(Darwin)
package import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the small-state lock of every Courier module.
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex that ThreadSanitizer cannot see,
/// so every `withLock` body is reported as a race and a real race cannot be found. A pthread
/// mutex is what TSan intercepts. The price: about 5 ns more per lock and unlock uncontended
/// (16.5 against 11.3 ns here, `scripts/lock-bench.sh`), a few locks per request.
///
/// One allocation holds the value and the mutex (a `ManagedBuffer`).
///
/// Thread-safety invariant (why `@unchecked Sendable` is sound): the value is read and
/// written only inside `withLock`, between `pthread_mutex_lock` and `pthread_mutex_unlock` on
/// the mutex stored beside it, which is initialized before the storage is shared and destroyed
/// only in its `deinit`. Values must be `Sendable`, since `withLock` hands them to any thread.
package struct LockedValue<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let storage: Storage

    /// Guards `value`.
    package init(_ value: Value) {
        storage = Storage.make(value)
    }

    /// Runs `body` with the value while holding the lock. Keep it short: no `await`, no I/O
    /// (one exception: a curl loop's wake-up, one non-blocking write, see `CurlEventLoop`),
    /// no call that may take another lock.
    @inlinable @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withLock(body)
    }

    /// The value as the buffer's header, the mutex as its one element.
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        static func make(_ value: Value) -> Storage {
            let buffer = Storage.create(minimumCapacity: 1) { _ in value }
            let storage = unsafeDowncast(buffer, to: Storage.self)
            storage.withUnsafeMutablePointerToElements { mutex in
                mutex.initialize(to: pthread_mutex_t())
                let status = pthread_mutex_init(mutex, nil)
                precondition(status == 0, "pthread_mutex_init failed (\(status))")
            }
            return storage
        }

        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }

        @inlinable @inline(__always)
        func withLock<Result, Failure: Error>(
            _ body: (inout Value) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            try withUnsafeMutablePointers { value, mutex throws(Failure) in
                pthread_mutex_lock(mutex)
                defer { pthread_mutex_unlock(mutex) }
                return try body(&value.pointee)
            }
        }
    }
}
