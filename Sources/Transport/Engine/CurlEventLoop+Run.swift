internal import CCurl
internal import CourierCore

#if canImport(Glibc)
internal import Glibc
#endif

/// The loop thread: everything here runs on it and nowhere else.
extension CurlEventLoop {
    func run() {
        courier_set_thread_name(threadName)
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.currentKey, nil) }
        bindLoopState()
        defer { unbindLoopState() }
        var stillRunning: Int32 = 0
        var draining = false
        guard let executor = jobExecutor else { preconditionFailure("the loop thread started without an executor") }
        var jobs: [UnownedJob] = []
        var censuses: [CheckedContinuation<ConnectionPoolSnapshot.Loop, Never>] = []
        // Censuses the loop stopped before answering find nothing left.
        defer { answer(censuses, with: .init(index: index)) }
        while true {
            // Jobs first: tasks resumed by the last round usually start their next transfer.
            inbox.withLock { swap(&jobs, &$0.jobs) }
            runsJobs.value = true
            for job in jobs { job.runSynchronously(on: executor) }
            runsJobs.value = false
            jobs.removeAll(keepingCapacity: true)
            let commands = inbox.withLock { inbox -> [Command] in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            for command in commands {
                switch command {
                case .add(let transfer): enqueue(transfer)
                case .cancel(let transfer):
                    if case .waiting = transfer.admission {
                        admission.value.forget(transfer)
                        refuse(transfer, .cancelled())
                    } else {
                        remove(transfer, failing: .cancelled())
                    }
                case .unpause(let transfer):
                    if running.value[ObjectIdentifier(transfer)] != nil, let easy = transfer.easy {
                        transfer.isPaused = false
                        transfer.idleWatch?.touch(at: courier_coarse_now())
                        _ = curl_easy_pause(easy, Int32(courier_pause_cont))
                    }
                case .census(let continuation):
                    // Answered after `curl_multi_perform`: before curl's first pass over a
                    // transfer, its handle still reports its last transfer's connection.
                    censuses.append(continuation)
                case .shutdown(let cancelInFlight):
                    draining = true
                    if cancelInFlight { cancelsInFlight.value = true }
                }
            }
            if draining && cancelsInFlight.value {
                // Waiting transfers first, so that none is admitted by the removals below.
                for (_, transfer) in admission.value.removeAll() {
                    refuse(transfer, ServiceError(.shutDown, "The transport was shut down."))
                }
                for transfer in Array(running.value.values) {
                    remove(transfer, failing: ServiceError(.shutDown, "The transport was shut down."))
                }
            }
            failExpiredWaiting()
            admitWaiting()
            if draining && running.value.isEmpty && admission.value.isEmpty { break }

            curl_multi_perform(multi, &stillRunning)
            collectFinished()
            if !censuses.isEmpty {
                answer(censuses, with: census())
                censuses.removeAll()
            }
            failIdle()
            admitWaiting()
            if draining && running.value.isEmpty && admission.value.isEmpty { break }

            let sleeps = inbox.withLock { inbox -> Bool in
                guard inbox.commands.isEmpty, inbox.jobs.isEmpty else { return false }
                inbox.polling = true
                return true
            }
            if sleeps {
                var ready: Int32 = 0
                curl_multi_poll(multi, nil, 0, pollTimeout(), &ready)
                inbox.withLock { $0.polling = false }
            }
        }
        tearDown()
    }

    /// Hands an admitted transfer to curl.
    func add(_ transfer: Transfer) {
        if transfer.isCancelRequested {
            refuse(transfer, .cancelled())
            return
        }
        let footprint = transfer.footprint
        var handle: IdleHandle
        var prepared = CURLE_OK
        if let idle = idleHandles.value.popLast() {
            handle = idle
            // Options the last transfer set and this one will not set again go back to curl's
            // defaults; every other option is overwritten by `attach`.
            if !footprint.isSuperset(of: handle.footprint) || handle.uses >= Self.usesBetweenResets {
                curl_easy_reset(handle.easy)
                prepared = prepare(handle.easy)
                handle.uses = 0
            }
        } else if let easy = curl_easy_init() {
            prepared = prepare(easy)
            handle = IdleHandle(
                easy: easy, errors: .allocate(capacity: Int(courier_error_size)), footprint: [])
        } else {
            refuse(transfer, ServiceError(.networkFailed, "curl could not allocate a transfer."))
            return
        }
        guard prepared == CURLE_OK else {
            handle.footprint = .unknown
            recycle(handle)
            refuse(transfer, connections.error(for: prepared))
            return
        }
        handle.footprint = footprint
        handle.uses += 1
        do {
            try transfer.attach(to: handle.easy, errors: handle.errors)
        } catch {
            // Some options may be set, others not: the next transfer starts from a reset.
            handle.footprint = .unknown
            transfer.detach()
            recycle(handle)
            refuse(transfer, error)
            return
        }
        let status = curl_multi_add_handle(multi, handle.easy)
        guard status == CURLM_OK else {
            transfer.detach()
            recycle(handle)
            refuse(transfer, ServiceError(.networkFailed, "curl refused the transfer (\(status.rawValue))."))
            return
        }
        transfer.handleFootprint = footprint
        transfer.handleUses = handle.uses
        // A streamed body's producer starts once curl has the transfer; it resumes the transfer
        // when curl paused it for want of bytes.
        transfer.upload?.channel?.start { [weak self, weak transfer] in
            if let self, let transfer { self.unpause(transfer) }
        }
        if let limit = transfer.request.options.idleTimeout {
            let watch = IdleWatch(limit: limit, started: courier_coarse_now(), sendsBody: transfer.upload != nil)
            transfer.idleWatch = watch
            nextIdleCheck.value = min(nextIdleCheck.value, watch.nextCheck)
        }
        running.value[ObjectIdentifier(transfer)] = transfer
    }

    /// Sets what is the same for every transfer, once per handle (and again after
    /// `curl_easy_reset`): curl opens and closes the handle's sockets through the loop's
    /// ``SocketRegistry``, and the transport's ``ConnectionSettings``. curl decodes no
    /// coding but chunked: Courier undoes content codings itself, and hands on a body in a
    /// transfer coding it cannot undo as it came (curl 7 would fail it as a bad content
    /// encoding; curl 8 leaves codings it was not asked for alone).
    private func prepare(_ easy: UnsafeMutableRawPointer) -> CURLcode {
        _ = courier_easy_setopt_socket_callbacks(
            easy, socketOpenCallback, socketCloseCallback, Unmanaged.passUnretained(self).toOpaque())
        let decoding = courier_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
        guard decoding == CURLE_OK else { return decoding }
        return connections.apply(to: easy)
    }

    /// Resumes census waiters with `snapshot`, telling ThreadSanitizer of the hand-over
    /// (``TSanHandoff``; the waiter acquires in ``CurlEventLoop/poolSnapshot()``).
    private func answer(
        _ censuses: [CheckedContinuation<ConnectionPoolSnapshot.Loop, Never>],
        with snapshot: ConnectionPoolSnapshot.Loop
    ) {
        TSanHandoff.release(self)
        for continuation in censuses { continuation.resume(returning: snapshot) }
    }

    /// Fails a transfer that never ran.
    func refuse(_ transfer: Transfer, _ error: ServiceError) {
        admission.value.release(transfer)
        transferLeft()
        transfer.fail(error)
    }

    /// Fails the running transfers that have been idle for their limit (see ``IdleWatch``).
    private func failIdle() {
        guard nextIdleCheck.value != .max else { return }
        let now = courier_coarse_now()
        guard now >= nextIdleCheck.value else { return }
        var next = Int64.max
        var expired: [Transfer] = []
        for transfer in running.value.values {
            guard var watch = transfer.idleWatch else { continue }
            if watch.nextCheck <= now, let easy = transfer.easy {
                switch watch.check(now: now, observation: idleObservation(transfer, easy)) {
                case .expired:
                    expired.append(transfer)
                    continue
                case .checkAt: break
                }
                transfer.idleWatch = watch
            }
            next = min(next, watch.nextCheck)
        }
        nextIdleCheck.value = next
        for transfer in expired {
            let limit = transfer.request.options.idleTimeout ?? .zero
            remove(
                transfer,
                failing: ServiceError(
                    .timedOut, "No byte moved in either direction for \(limit) (the idle timeout) once connected."))
        }
    }

    /// What an idle check needs to know of a running transfer, from curl and the socket.
    private func idleObservation(_ transfer: Transfer, _ easy: UnsafeMutableRawPointer) -> IdleWatch.Observation {
        let pretransfer = Self.pretransferTime(easy)
        let connected = Self.isConnected(easy, pretransfer: pretransfer)
        // The send queue matters only while a request body may wait in it.
        var queued: Int?
        if connected, transfer.upload != nil {
            if let socket = connectionSocket(easy) {
                let bytes = courier_socket_unacknowledged_bytes(socket)
                if bytes >= 0 { queued = bytes }
            }
        }
        return IdleWatch.Observation(
            connectedAfter: connected ? Int64(pretransfer) * 1_000 : nil, unacknowledgedBytes: queued,
            isPaused: transfer.isPaused)
    }

    private func remove(_ transfer: Transfer, failing error: ServiceError) {
        guard running.value.removeValue(forKey: ObjectIdentifier(transfer)) != nil else { return }
        guard let easy = transfer.easy else {
            assertionFailure("a running transfer without its easy handle")
            admission.value.release(transfer)
            transferLeft()
            transfer.fail(error)
            return
        }
        curl_multi_remove_handle(multi, easy)
        admission.value.release(transfer)
        transferLeft()
        transfer.fail(error)
        takeHandle(from: transfer)
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
            var connects = 0
            _ = courier_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
            // curl names the connection's socket only while the handle is in the multi.
            if connects > 0 { attributeConnection(of: transfer, easy: easy) }
            curl_multi_remove_handle(multi, easy)
            running.value.removeValue(forKey: ObjectIdentifier(transfer))
            var version = 0
            _ = courier_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            admission.value.release(transfer, httpVersion: version >= CURL_HTTP_VERSION_2_0 ? 2 : 1)
            transferLeft()
            transfer.complete(with: result)
            takeHandle(from: transfer, clean: result == CURLE_OK && connects == 0)
        }
    }

    /// Takes a finished transfer's easy handle back for the next transfer. A transfer that is
    /// not `clean` (it failed, was removed, or opened a connection) leaves a handle that the
    /// next `add` resets (see ``CurlEventLoop/usesBetweenResets``).
    private func takeHandle(from transfer: Transfer, clean: Bool = false) {
        guard let easy = transfer.easy, let errors = transfer.errorBuffer else {
            assertionFailure("a running transfer without its easy handle")
            return
        }
        var handle = IdleHandle(
            easy: easy, errors: errors, footprint: clean ? transfer.handleFootprint : .unknown)
        handle.uses = transfer.handleUses
        let sentTrailers = transfer.handleFootprint.contains(.trailers)
        transfer.detach()
        if sentTrailers {
            // curl 7.88 never resets a handle's trailer state (`state.trailers_state`, not even in
            // `curl_easy_reset`): the next chunked upload on it would write its chunk framing
            // before and after curl's upload buffer. A handle that sent request trailers is freed.
            curl_easy_cleanup(handle.easy)
            handle.errors.deallocate()
            return
        }
        recycle(handle)
    }

    /// Keeps a handle for the next transfer, or frees it when enough are kept. Its options stay
    /// as they are: the next `add` resets them only when it must.
    private func recycle(_ handle: IdleHandle) {
        if idleHandles.value.count < limits.idleHandles {
            idleHandles.value.append(handle)
        } else {
            curl_easy_cleanup(handle.easy)
            handle.errors.deallocate()
        }
    }

    private func tearDown() {
        for handle in idleHandles.value {
            curl_easy_cleanup(handle.easy)
            handle.errors.deallocate()
        }
        idleHandles.value.removeAll()
        curl_multi_cleanup(multi)
        let (waiters, jobs, left) = inbox.withLock {
            inbox -> ([CheckedContinuation<Void, Never>], [UnownedJob], [Command]) in
            inbox.phase = .stopped
            defer {
                inbox.commands.removeAll()
                inbox.shutdownWaiters.removeAll()
                inbox.jobs.removeAll()
            }
            return (inbox.shutdownWaiters, inbox.jobs, inbox.commands)
        }
        // Anything queued after the shutdown command belongs to transfers that must fail, or
        // asks for a census that finds nothing left. Resumed outside the lock: a task that
        // prefers this loop's executor enqueues its job through it.
        var refused: [Transfer] = []
        for command in left {
            switch command {
            case .add(let transfer): refused.append(transfer)
            case .census(let continuation): answer([continuation], with: .init(index: index))
            default: break
            }
        }
        let waiting = admission.value.removeAll().map(\.transfer)
        for transfer in waiting + refused { refuse(transfer, ServiceError(.shutDown, "The transport was shut down.")) }
        publishWaiting()
        // Tasks that still prefer this executor carry on on the global one.
        for job in jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        for waiter in waiters { waiter.resume() }
    }
}
