#if PostgreSQL
internal import CourierCaching
internal import CourierCore
internal import Logging

/// Purges the shared tier missed: one whose call may not have reached the server (down, slow,
/// or skipped after a failure) waits in ``pendingPurges``. Reads apply the waiting purges to
/// what they find, so this instance never serves a row they name; and they are applied to the
/// server, in order and announced to the fleet as if new, as soon as it answers: after any call
/// that succeeds, when the listener connects again, and from a retry (after 1 s, then up to
/// every 10 s). Calls never wait for them.
extension PostgresCacheStore {
    /// Keeps `purge` until the server answers, and schedules retries unless they run.
    func wait(_ purge: PendingPurges.Purge) {
        let (dropped, startRetries) = pendingPurges.withLock { pending in
            defer { pending.retrying = true }
            return (pending.add(purge), !pending.retrying)
        }
        if let dropped {
            logger?.error(
                "the PostgreSQL cache gave up a purge: more than \(PendingPurges.limit) waited for the server",
                metadata: ["target": "\(dropped.target)", "soft": "\(dropped.soft)"])
        }
        if startRetries { retryWaitingPurges() }
    }

    /// Applies the waiting purges in the background, unless none wait or a replay runs.
    func applyWaitingPurgesInBackground() {
        if pendingPurges.withLock({ $0.startReplay() }) { Task { _ = await replay() } }
    }

    /// Applies the waiting purges in order (``PendingPurges/replaying`` set by the caller, and
    /// cleared in the same step that finds none left or on a failure); returns whether the pool
    /// shut down. Each purge gets the longer of the call and eviction limits. One the server
    /// refuses (it answered with an error that says more than "not now"), or that timed out
    /// three times, is given up with an error log: applying it again would end the same way.
    private func replay() async -> Bool {
        let limit = max(configuration.timeout, configuration.evictionTimeout)
        while true {
            let next = pendingPurges.withLock { pending -> PendingPurges.Purge? in
                if pending.waiting.isEmpty || pending.holdsReplays { pending.replaying = false }
                return pending.replaying ? pending.waiting.first : nil
            }
            guard let purge = next else { return false }
            do {
                _ = try await CallDeadline.run("a purge that waited", limit: limit) {
                    try await self.schemaReady()
                    return try await self.apply(purge, replayed: true)
                }
            } catch {
                let failure = Self.failure(error, operation: "a purge that waited")
                let retries = pendingPurges.withLock { pending in
                    let retries =
                        Self.missedTheServer(failure) && (failure.code != .timedOut || pending.timedOut(purge))
                    if retries { pending.replaying = false }
                    return retries
                }
                if retries { return Self.isShutDown(failure.underlying ?? failure) }
                logger?.error(
                    "the PostgreSQL cache gave up a purge the server did not apply",
                    metadata: ["target": "\(purge.target)", "soft": "\(purge.soft)", "error": "\(failure)"])
                pendingPurges.withLock { $0.remove(purge) }
                continue
            }
            pendingPurges.withLock { $0.remove(purge) }
            // This instance's own caches too: they may have copied a row before the purge.
            remoteChanges.notify(.purge(purge.target))
        }
    }

    /// Retries the waiting purges after 1 s, then after twice the pause up to 10 s, until none
    /// wait, the pool shuts down or the store goes. Only this loop clears
    /// ``PendingPurges/retrying``, so one runs at a time.
    private func retryWaitingPurges() {
        let first = pendingPurges.withLock { $0.firstRetryPause }
        Task { [weak self] in
            var pause = first
            while true {
                try? await Task.sleep(for: pause)
                guard let self else { return }
                let starts = self.pendingPurges.withLock { $0.startReplay() }
                let shutDown = starts ? await self.replay() : false
                let done = self.pendingPurges.withLock { pending in
                    if pending.waiting.isEmpty || shutDown { pending.retrying = false }
                    return !pending.retrying
                }
                if done { return }
                pause = min(pause * 2, .seconds(10))
            }
        }
    }
}
#endif
