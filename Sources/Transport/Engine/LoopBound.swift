#if canImport(Glibc)
internal import Glibc
#endif

/// A value that belongs to one thread: a curl loop's state and the transfers it runs, touched
/// only on the loop thread, and each thread's ``RecentFields``.
///
/// Its value skips Swift's dynamic exclusivity checks in release builds (each access to a
/// class's `var` otherwise records itself in a per-thread table: some 4,000 to 6,000
/// instructions a request over a loop's state and its transfers'; see PERFORMANCE.md). What
/// makes that sound: one thread touches the value, and never in two overlapping accesses (curl
/// calls back into the loop only from `curl_multi_perform`, `curl_multi_socket_action` and
/// `curl_easy_pause`, none of which runs inside an access to the value; a thread parses one
/// head at a time). This is the only place in Courier that skips those checks.
///
/// Both halves are checked in debug builds, and so in tests and under the sanitizers: once
/// ``bindToCurrentThread()`` runs (the loop thread does, as it starts or accepts a transfer),
/// an access on another thread traps (before that, the thread that creates the value sets it
/// up); and there the value keeps Swift's dynamic exclusivity checks, so an overlapping access
/// traps too. Release builds check neither and store no owner.
final class LoopBound<Value: ~Copyable>: LoopBinding {
    #if DEBUG
    /// Checked in debug builds: an overlapping access traps there.
    private var storage: Value
    private var owner: pthread_t?
    #else
    @exclusivity(unchecked) private var storage: Value
    #endif

    init(_ value: consuming Value) {
        storage = value
    }

    /// The value, on the owning thread.
    var value: Value {
        _read {
            checkThread()
            yield storage
        }
        _modify {
            checkThread()
            yield &storage
        }
    }

    /// Makes the calling thread the owner: from now on, only it may touch the value.
    func bindToCurrentThread() {
        #if DEBUG
        owner = pthread_self()
        #endif
    }

    /// The owning thread is done with the value (it ends): whoever tears the loop down may touch it.
    func unbind() {
        #if DEBUG
        owner = nil
        #endif
    }

    @inline(__always)
    private func checkThread() {
        #if DEBUG
        if let owner {
            precondition(pthread_equal(owner, pthread_self()) != 0, "loop-bound state touched off its loop thread")
        }
        #endif
    }
}

/// What binds a ``LoopBound`` to its thread, whatever its value.
protocol LoopBinding: AnyObject {
    func bindToCurrentThread()
    func unbind()
}
