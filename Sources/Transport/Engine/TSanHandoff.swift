#if canImport(Glibc)
internal import Glibc
#endif

/// Tells ThreadSanitizer about the hand-over it cannot see: a result the loop thread passes to
/// a task through a continuation (a transfer's, ``Transfer/Delivery``; a pool census) when it
/// resumes it before the task has reached its `await`.
///
/// Why it is needed: the Swift runtime (6.3.1) tells TSan about a continuation's hand-over with
/// `_swift_tsan_release(task)` in the resume and `_swift_tsan_acquire(task)` when the resumed
/// task's job starts to run. When the resume wins the race with the await,
/// `swift_continuation_await` finds the continuation already resumed and the task goes on
/// inline, in the job it was already running, so no acquire is made. The ordering is real (the
/// resume publishes the result with a release compare-and-swap of the continuation's status,
/// which the await reads with an acquire load) but it happens in the uninstrumented runtime,
/// so TSan reports the task's first read of anything the loop thread built for it, such as an
/// `HTTPResponse`'s pseudo-header storage.
///
/// `release` is called on the loop thread just before the continuation is resumed, `acquire`
/// on the task once the continuation has returned, both with the transfer's address. They only
/// restate an edge the runtime provides, for this one hand-over. Outside a TSan build the hooks
/// are absent and each call is a test of `nil`.
enum TSanHandoff {
    private typealias Hook = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// `__tsan_release` and `__tsan_acquire`, found once, when the TSan runtime is linked in.
    private static let hooks: (release: Hook, acquire: Hook)? = {
        guard let release = dlsym(nil, "__tsan_release"), let acquire = dlsym(nil, "__tsan_acquire") else { return nil }
        return (unsafeBitCast(release, to: Hook.self), unsafeBitCast(acquire, to: Hook.self))
    }()

    /// The loop thread is about to resume a continuation keyed by `object` (a transfer, or the
    /// loop for a pool census).
    @inline(__always)
    static func release(_ object: AnyObject) {
        hooks?.release(Unmanaged.passUnretained(object).toOpaque())
    }

    /// The task's continuation keyed by `object` returned (or threw).
    @inline(__always)
    static func acquire(_ object: AnyObject) {
        hooks?.acquire(Unmanaged.passUnretained(object).toOpaque())
    }
}
