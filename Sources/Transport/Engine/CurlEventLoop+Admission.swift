internal import CCurl

/// Admission (loop thread): transfers wait in ``CurlEventLoop/admission`` until curl has a
/// connection for them, so that curl holds easy handles, buffers and header lists only for
/// the transfers it can run.
///
/// Timeouts: a transfer's total timeout (``TransferOptions/timeout``) counts from when the
/// caller sent it, not from its admission, so that a caller's deadline holds however long
/// the queue; one that runs out while waiting fails with `timedOut` without reaching curl,
/// and one admitted late gets only what is left. The connect and idle timeouts are curl's
/// and count from admission (they measure the connection and the peer, not the queue).
extension CurlEventLoop {
    /// Accepts a transfer handed to the loop: it waits for admission.
    func enqueue(_ transfer: Transfer) {
        transfer.loopSide.bindToCurrentThread()  // the loop's from now on
        if transfer.isCancelRequested {
            refuse(transfer, .cancelled())
            return
        }
        admission.value.enqueue(transfer)
        if let deadline = transfer.deadline, nextWaitingDeadline.value.map({ deadline < $0 }) ?? true {
            nextWaitingDeadline.value = deadline
        }
    }

    /// Hands curl every waiting transfer it has room for, oldest first.
    func admitWaiting() {
        while let transfer = admission.value.next() {
            if let deadline = transfer.deadline, deadline <= .now {
                refuse(transfer, Self.waitedOut)
            } else {
                add(transfer)
            }
        }
        if admission.value.isEmpty { nextWaitingDeadline.value = nil }
        publishWaiting()
    }

    /// Fails the waiting transfers whose total timeout has run out.
    func failExpiredWaiting() {
        guard let next = nextWaitingDeadline.value else { return }
        let now = ContinuousClock.now
        guard next <= now else { return }
        let expired = admission.value.removeExpired { transfer in transfer.deadline.map { $0 <= now } ?? false }
        for transfer in expired { refuse(transfer, Self.waitedOut) }
        nextWaitingDeadline.value = admission.value.earliestDeadline()
        publishWaiting()
    }

    /// How long `curl_multi_poll` may sleep: a second at most, less when a waiting transfer's
    /// deadline or a running transfer's idle check comes sooner (curl wakes up for its own
    /// timers by itself).
    func pollTimeout() -> Int32 {
        var timeout = 1000
        if let next = nextWaitingDeadline.value {
            let remaining = next - .now
            if remaining <= .zero { return 0 }
            timeout = min(timeout, remaining.milliseconds)
        }
        if nextIdleCheck.value != .max {
            // Rounded up: the coarse clock must have reached the check when the loop wakes.
            let remaining = (nextIdleCheck.value - courier_coarse_now() + 999_999) / 1_000_000
            timeout = min(timeout, max(Int(remaining), 0))
        }
        return Int32(timeout)
    }

    static var waitedOut: ServiceError {
        ServiceError(
            .timedOut,
            "The request timed out while waiting for a connection (its total timeout counts from when it was sent).",
            underlying: TransportWait())
    }
}
