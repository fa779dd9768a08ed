internal import CourierCore
internal import CCurl
#if canImport(Glibc)
internal import Glibc
#endif

/// Owns one `CURLM` and the thread that drives it with `curl_multi_poll`.
///
/// Thread-safety invariant (why `@unchecked Sendable` is sound): `multi`'s transfers,
/// `running` and `idleHandles` are touched only on the loop thread. Other threads reach
/// the loop only through `inbox` (a `LockedValue`) followed by `curl_multi_wakeup`, which libcurl
/// documents as callable from any thread.
///
/// The loop is also a `TaskExecutor`: jobs of tasks that prefer it are queued in the inbox
/// and run on the loop thread between two rounds of curl work. A transfer that completes
/// then resumes its task on the thread that completed it, with no thread to wake.
final class CurlEventLoop: TaskExecutor, @unchecked Sendable {
    struct Limits: Sendable {
        var connectionsPerHost: Int
        var connections: Int
        var idleConnections: Int
        var idleHandles: Int
    }

    private enum Command {
        case add(Transfer)
        case cancel(Transfer)
        case unpause(Transfer)
        case shutdown(cancelInFlight: Bool)
    }

    private enum Phase { case running, draining, stopped }

    private struct Inbox {
        var commands: [Command] = []
        var jobs: [UnownedJob] = []
        var polling = false
        var phase = Phase.running
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = LockedValue(Inbox())
    private let limits: Limits
    private let threadName: String
    private var running: [ObjectIdentifier: Transfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private var cancelsInFlight = false

    init(limits: Limits, threadName: String) {
        CurlLibrary.initializeOnce()
        guard let multi = curl_multi_init() else { preconditionFailure("curl_multi_init failed: out of memory") }
        self.multi = multi
        self.limits = limits
        self.threadName = threadName
        _ = courier_multi_setopt_long(multi, CURLMOPT_PIPELINING, courier_pipe_multiplex)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.connectionsPerHost)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.connections)
        if limits.idleConnections > 0 {
            _ = courier_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limits.idleConnections)
        }
        startThread()
    }

    private func startThread() {
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

    /// Hands a transfer to the loop. After this call the transfer belongs to the loop.
    func start(_ transfer: Transfer) {
        if !submit(.add(transfer)) {
            transfer.fail(ServiceError(.shutDown, "The transport was shut down."))
        }
    }

    func cancel(_ transfer: Transfer) {
        transfer.requestCancel()
        _ = submit(.cancel(transfer))
    }

    func unpause(_ transfer: Transfer) { _ = submit(.unpause(transfer)) }

    /// Stops accepting transfers, then drains or cancels those in flight; returns when the
    /// loop thread has released every curl resource.
    func shutdown(cancelInFlight: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (wake, alreadyStopped) = inbox.withLock { inbox -> (Bool, Bool) in
                if inbox.phase == .stopped { return (false, true) }
                inbox.shutdownWaiters.append(continuation)
                inbox.phase = .draining
                inbox.commands.append(.shutdown(cancelInFlight: cancelInFlight))
                return (inbox.polling, false)
            }
            if alreadyStopped { continuation.resume() }
            if wake { curl_multi_wakeup(multi) }
        }
    }

    /// Fire-and-forget shutdown for `deinit`.
    func shutdownDetached() {
        let wake = inbox.withLock { inbox -> Bool in
            guard inbox.phase == .running else { return false }
            inbox.phase = .draining
            inbox.commands.append(.shutdown(cancelInFlight: true))
            return inbox.polling
        }
        if wake { curl_multi_wakeup(multi) }
    }

    /// Queues a job of a task that prefers this executor; once the loop has stopped, jobs go
    /// to the global concurrent executor instead.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (queued, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard inbox.phase != .stopped else { return (false, false) }
            inbox.jobs.append(job)
            return (true, inbox.polling)
        }
        if wake { curl_multi_wakeup(multi) }
        if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    private func submit(_ command: Command) -> Bool {
        let (accepted, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            switch (inbox.phase, command) {
            case (.stopped, _), (.draining, .add): return (false, false)
            default:
                inbox.commands.append(command)
                return (true, inbox.polling)
            }
        }
        if wake { curl_multi_wakeup(multi) }
        return accepted
    }

    // MARK: loop thread

    private func run() {
        courier_set_thread_name(threadName)
        var stillRunning: Int32 = 0
        var draining = false
        let executor = asUnownedTaskExecutor()
        var jobs: [UnownedJob] = []
        while true {
            // Jobs first: tasks resumed by the last round usually start their next transfer.
            inbox.withLock { swap(&jobs, &$0.jobs) }
            for job in jobs { job.runSynchronously(on: executor) }
            jobs.removeAll(keepingCapacity: true)
            let commands = inbox.withLock { inbox -> [Command] in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            for command in commands {
                switch command {
                case .add(let transfer): add(transfer)
                case .cancel(let transfer): remove(transfer, failing: .cancelled())
                case .unpause(let transfer):
                    if running[ObjectIdentifier(transfer)] != nil, let easy = transfer.easy {
                        _ = curl_easy_pause(easy, Int32(courier_pause_cont))
                    }
                case .shutdown(let cancelInFlight):
                    draining = true
                    if cancelInFlight { cancelsInFlight = true }
                }
            }
            if draining && cancelsInFlight {
                for transfer in Array(running.values) {
                    remove(transfer, failing: ServiceError(.shutDown, "The transport was shut down."))
                }
            }
            if draining && running.isEmpty { break }

            curl_multi_perform(multi, &stillRunning)
            collectFinished()
            if draining && running.isEmpty { break }

            let sleeps = inbox.withLock { inbox -> Bool in
                guard inbox.commands.isEmpty, inbox.jobs.isEmpty else { return false }
                inbox.polling = true
                return true
            }
            if sleeps {
                var ready: Int32 = 0
                curl_multi_poll(multi, nil, 0, 1000, &ready)
                inbox.withLock { $0.polling = false }
            }
        }
        tearDown()
    }

    private func add(_ transfer: Transfer) {
        if transfer.isCancelRequested {
            transfer.fail(.cancelled())
            return
        }
        guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
            transfer.fail(ServiceError(.networkFailed, "curl could not allocate a transfer."))
            return
        }
        do {
            try transfer.attach(to: easy)
        } catch {
            transfer.detach()
            recycle(easy)
            transfer.fail(error)
            return
        }
        let status = curl_multi_add_handle(multi, easy)
        guard status == CURLM_OK else {
            transfer.detach()
            recycle(easy)
            transfer.fail(ServiceError(.networkFailed, "curl refused the transfer (\(status.rawValue))."))
            return
        }
        running[ObjectIdentifier(transfer)] = transfer
    }

    private func remove(_ transfer: Transfer, failing error: ServiceError) {
        guard running.removeValue(forKey: ObjectIdentifier(transfer)) != nil, let easy = transfer.easy else { return }
        curl_multi_remove_handle(multi, easy)
        transfer.fail(error)
        transfer.detach()
        recycle(easy)
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            var pointer: UnsafeMutableRawPointer?
            _ = courier_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
            guard let pointer else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
            curl_multi_remove_handle(multi, easy)
            transfer.complete(with: result)
            transfer.detach()
            running.removeValue(forKey: ObjectIdentifier(transfer))
            recycle(easy)
        }
    }

    private func recycle(_ easy: UnsafeMutableRawPointer) {
        if idleHandles.count < limits.idleHandles {
            curl_easy_reset(easy)
            idleHandles.append(easy)
        } else {
            curl_easy_cleanup(easy)
        }
    }

    private func tearDown() {
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        curl_multi_cleanup(multi)
        let (waiters, jobs) = inbox.withLock { inbox -> ([CheckedContinuation<Void, Never>], [UnownedJob]) in
            inbox.phase = .stopped
            // Anything queued after the shutdown command belongs to transfers that must fail.
            for command in inbox.commands {
                if case .add(let transfer) = command {
                    transfer.fail(ServiceError(.shutDown, "The transport was shut down."))
                }
            }
            inbox.commands.removeAll()
            defer {
                inbox.shutdownWaiters.removeAll()
                inbox.jobs.removeAll()
            }
            return (inbox.shutdownWaiters, inbox.jobs)
        }
        // Tasks that still prefer this executor carry on on the global one.
        for job in jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        for waiter in waiters { waiter.resume() }
    }
}

/// libcurl's process-wide initialisation, done once before the first multi handle.
enum CurlLibrary {
    private static let initialized: Bool = curl_global_init(courier_global_default) == CURLE_OK

    static func initializeOnce() {
        precondition(initialized, "curl_global_init failed")
    }
}
