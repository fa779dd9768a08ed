internal import CCurl
internal import CourierCore
internal import Synchronization

#if canImport(Glibc)
internal import Glibc
#endif

/// Owns one `CURLM`, its connection pool and the thread that drives it with `curl_multi_poll`.
/// A ``CurlLoopGroup`` holds one or more and spreads transfers over them.
///
/// Thread-safety invariant (why `@unchecked Sendable` is sound): `multi`'s transfers,
/// `running`, `admission`, `nextWaitingDeadline`, `nextIdleCheck`, `sockets`, `idleHandles`, `cancelsInFlight` and
/// `runsJobs` are touched only on the loop thread; `jobExecutor` is written once before the thread starts. Other threads reach the
/// loop only through `inbox` (a `LockedValue`) and `curl_multi_wakeup` under its lock, which libcurl
/// documents as callable from any thread, and read `load` and `waiting`, atomics. The loop
/// thread's state sits in ``LoopBound`` boxes, which check the thread in debug builds (bound
/// when the thread starts) and skip dynamic exclusivity checks.
///
/// Jobs of tasks that prefer the group's executor are queued in the inbox and run on the loop
/// thread between two rounds of curl work. A transfer that completes then resumes its task on
/// the thread that completed it, with no thread to wake.
final class CurlEventLoop: @unchecked Sendable {
    struct Limits: Sendable, Equatable {
        var connectionsPerHost: Int
        var connections: Int
        var idleConnections: Int
        var idleHandles: Int
    }

    enum Command {
        case add(Transfer)
        case cancel(Transfer)
        case unpause(Transfer)
        case census(CheckedContinuation<ConnectionPoolSnapshot.Loop, Never>)
        case shutdown(cancelInFlight: Bool)
    }

    enum Phase { case running, draining, stopped }

    /// An easy handle kept for the next transfer. It keeps the options its last transfer set
    /// (see ``OptionFootprint``) and its error buffer, which lives as long as the handle so that
    /// curl never holds a pointer to freed memory.
    struct IdleHandle {
        let easy: UnsafeMutableRawPointer
        let errors: UnsafeMutablePointer<CChar>
        var footprint: OptionFootprint
        /// Transfers since its last `curl_easy_reset`.
        var uses = 0
    }

    /// A handle is reset at least this often, whatever its transfers set. Options are not all
    /// curl keeps per handle: it counts the retries of requests whose reused connection died,
    /// clears the count only in `curl_easy_reset`, and fails the sixth retry ("Connection died,
    /// tried 5 times"). A transfer that failed or opened a connection (where a retry shows)
    /// resets its handle anyway; this bounds what retries on other pooled connections can add.
    static let usesBetweenResets = 16

    struct Inbox {
        var commands: [Command] = []
        var jobs: [UnownedJob] = []
        var polling = false
        var phase = Phase.running
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// This loop's place in its group.
    let index: Int
    let multi: UnsafeMutableRawPointer
    let inbox = LockedValue(Inbox())
    let limits: Limits
    /// Options every handle of the transport carries (see ``ConnectionSettings``).
    let connections: ConnectionSettings
    let threadName: String
    /// Transfers handed to this loop and not yet finished (queued, running or streaming): what
    /// the group balances on.
    private let assigned = Atomic<Int>(0)
    /// The executor jobs run on: the group's, so the runtime sees tasks on their preferred executor.
    var jobExecutor: UnownedTaskExecutor?
    let running = LoopBound<[ObjectIdentifier: Transfer]>([:])
    /// Transfers accepted but not yet handed to curl (see ``AdmissionQueue``).
    let admission: LoopBound<AdmissionQueue>
    /// The earliest total-timeout deadline among waiting transfers, when one may have one.
    let nextWaitingDeadline = LoopBound<ContinuousClock.Instant?>(nil)
    /// The earliest idle check (``IdleWatch/nextCheck``) among running transfers, on the coarse
    /// clock; `.max` when none has an idle limit.
    let nextIdleCheck = LoopBound(Int64.max)
    /// The sockets curl has open, by local port (see ``SocketRegistry``).
    let sockets = LoopBound(SocketRegistry())
    /// How many transfers wait for admission, readable from any thread.
    private let waitingCount = Atomic<Int>(0)
    /// Easy handles between transfers, each with its error buffer and what its last transfer set.
    let idleHandles = LoopBound<[IdleHandle]>([])
    let cancelsInFlight = LoopBound(false)
    /// True while the loop thread runs task jobs, false while it does curl work.
    let runsJobs = LoopBound(false)

    init(index: Int, limits: Limits, connections: ConnectionSettings = .init(), threadName: String) {
        CurlLibrary.initializeOnce()
        guard let multi = curl_multi_init() else { preconditionFailure("curl_multi_init failed: out of memory") }
        self.index = index
        self.multi = multi
        self.limits = limits
        self.connections = connections
        self.threadName = threadName
        admission = LoopBound(AdmissionQueue(limits: limits))
        _ = courier_multi_setopt_long(multi, CURLMOPT_PIPELINING, courier_pipe_multiplex)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.connectionsPerHost)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.connections)
        if limits.idleConnections > 0 {
            _ = courier_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limits.idleConnections)
        }
    }

    /// Starts the loop thread; jobs will run on `executor`. Called once, before any other use.
    func startThread(jobExecutor executor: UnownedTaskExecutor) {
        jobExecutor = executor
        var thread = pthread_t()
        // The thread owns a reference to the loop until `run` returns.
        let retained = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { argument in
                let loop = Unmanaged<CurlEventLoop>.fromOpaque(argument!).takeRetainedValue()
                loop.run()
                return nil
            }, retained)
        precondition(status == 0, "could not start the curl loop thread (\(status))")
        pthread_detach(thread)
    }

    // MARK: any thread

    /// Whether the loop accepts transfers, drains them or has stopped.
    var phase: Phase { inbox.withLock { $0.phase } }

    /// Transfers handed to this loop and not yet finished.
    var load: Int { assigned.load(ordering: .relaxed) }

    /// Transfers accepted and waiting for a connection, not yet handed to curl.
    var waiting: Int { waitingCount.load(ordering: .relaxed) }

    /// Makes the calling thread (the loop thread, as it starts) the only one that may touch the
    /// loop's state (checked in debug builds).
    func bindLoopState() {
        for state in loopState { state.bindToCurrentThread() }
    }

    /// The loop thread ends: its state goes to whoever tears the loop down.
    func unbindLoopState() {
        for state in loopState { state.unbind() }
    }

    private var loopState: [any LoopBinding] {
        [running, admission, nextWaitingDeadline, nextIdleCheck, sockets, idleHandles, cancelsInFlight, runsJobs]
    }

    /// Publishes the admission queue's size (loop thread).
    func publishWaiting() { waitingCount.store(admission.value.count, ordering: .relaxed) }

    /// Called once for every transfer that leaves the loop (finished, failed or refused).
    func transferLeft() { assigned.subtract(1, ordering: .relaxed) }

    /// Hands a transfer to the loop. After this call the transfer belongs to the loop.
    func start(_ transfer: Transfer) {
        assigned.add(1, ordering: .relaxed)
        if !submit(.add(transfer)) {
            transferLeft()
            transfer.fail(ServiceError(.shutDown, "The transport was shut down."))
        }
    }

    func cancel(_ transfer: Transfer) {
        transfer.requestCancel()
        _ = submit(.cancel(transfer))
    }

    func unpause(_ transfer: Transfer) { _ = submit(.unpause(transfer)) }

    /// This loop's connections and transfers right now (see ``census()``), answered after the
    /// loop's next round of curl work; an empty count once the loop has stopped.
    func poolSnapshot() async -> ConnectionPoolSnapshot.Loop {
        let snapshot = await withCheckedContinuation { continuation in
            if !submit(.census(continuation)) { continuation.resume(returning: .init(index: index)) }
        }
        TSanHandoff.acquire(self)
        return snapshot
    }

    /// Stops accepting transfers, then drains or cancels those in flight; returns when the
    /// loop thread has released every curl resource.
    func shutdown(cancelInFlight: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyStopped = inbox.withLock { inbox -> Bool in
                if inbox.phase == .stopped { return true }
                inbox.shutdownWaiters.append(continuation)
                inbox.phase = .draining
                inbox.commands.append(.shutdown(cancelInFlight: cancelInFlight))
                wakeIfPolling(&inbox)
                return false
            }
            if alreadyStopped { continuation.resume() }
        }
    }

    /// Fire-and-forget shutdown for `deinit`.
    func shutdownDetached() {
        inbox.withLock { inbox in
            guard inbox.phase == .running else { return }
            inbox.phase = .draining
            inbox.commands.append(.shutdown(cancelInFlight: true))
            wakeIfPolling(&inbox)
        }
    }

    /// Queues a job of a task that prefers the group's executor; once the loop has stopped,
    /// jobs go to the global concurrent executor instead.
    func enqueueJob(_ job: UnownedJob) {
        let queued = inbox.withLock { inbox -> Bool in
            guard inbox.phase != .stopped else { return false }
            inbox.jobs.append(job)
            wakeIfPolling(&inbox)
            return true
        }
        if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    private func submit(_ command: Command) -> Bool {
        inbox.withLock { inbox -> Bool in
            switch (inbox.phase, command) {
            case (.stopped, _), (.draining, .add): return false
            default:
                inbox.commands.append(command)
                wakeIfPolling(&inbox)
                return true
            }
        }
    }

    /// Wakes the loop thread from `curl_multi_poll`, once per poll. Called under the inbox's
    /// lock: the loop clears `polling` under it when its poll returns and frees `multi` only
    /// after, so a wake-up never reaches a freed multi handle (one made after the lock was
    /// released could, when the loop stopped in between).
    private func wakeIfPolling(_ inbox: inout Inbox) {
        guard inbox.polling else { return }
        inbox.polling = false
        curl_multi_wakeup(multi)
    }

    // MARK: which loop runs this thread

    /// The loop whose thread is calling, if any.
    static var current: CurlEventLoop? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        // The loop thread holds a reference to its loop until it clears the key.
        return Unmanaged<CurlEventLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "could not create the curl loop thread key")
        return key
    }()
}

/// libcurl's process-wide initialisation, done once before the first multi handle.
enum CurlLibrary {
    private static let initialized: Bool = curl_global_init(courier_global_default) == CURLE_OK

    static func initializeOnce() {
        precondition(initialized, "curl_global_init failed")
    }
}
