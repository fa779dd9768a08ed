internal import CourierCaching
internal import CourierCore
internal import HTTPTypes
internal import Logging

/// Host pauses a fleet shares: a `429` or `503` with `Retry-After` pauses its host here at once
/// and, through the cache's ``HostPausing`` store, for every process of the fleet, which reads
/// the store's pauses about once a second. A paused host's loads fail at once with
/// `hostPaused` until the pause ends.
extension RequestCoordinator {
    /// How often a coordinator reads its fleet's host pauses.
    static let hostPauseRefresh: Duration = .seconds(1)

    /// The first store of `cache` that keeps host pauses for a fleet.
    static func hostPausingStore(in cache: TieredCache?) -> (any HostPausing)? {
        guard let cache else { return nil }
        for store in cache.stores {
            if let pausing = store as? any HostPausing { return pausing }
        }
        return nil
    }

    /// Reads `store`'s pauses into `policies` now and every ``hostPauseRefresh`` until
    /// cancelled. A read that fails is logged at debug level and tried again next time: this
    /// process's own pauses still hold.
    static func followHostPauses(
        in store: any HostPausing, into policies: HostPolicies, logger: Logger?
    ) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                do {
                    for (name, left) in try await store.hostPauses() {
                        guard let host = HostQueue.Host(name: name) else { continue }
                        // Within a second of a pause already on: this process's own, read back.
                        if policies.pause(host, for: left, tolerance: .seconds(1)) {
                            logger?.debug(
                                "the fleet paused a host",
                                metadata: ["courier.host": "\(name)", "courier.pause": "\(left)"])
                        }
                    }
                } catch {
                    logger?.debug("could not read the fleet's host pauses", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: hostPauseRefresh)
            }
        }
    }

    /// When `outcome` is a `429` or `503` with `Retry-After` from the network, pauses its host
    /// for that long (at most the retry policy's `maximumRetryAfter`), here and for the fleet.
    nonisolated func notePause(
        _ outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer, telemetry: LoadTelemetry?
    ) {
        guard let store = hostPausingStore, transfer.stub == nil, transfer.policy.honorsRetryAfter,
            case .success(let response) = outcome
        else { return }
        let status = response.head.status.code
        guard status == 429 || status == 503, let value = response.head.headerFields[.retryAfter],
            let asked = RetryPolicy.retryAfter(value, now: configuration.now())
        else { return }
        let pause = min(asked, transfer.policy.maximumRetryAfter)
        guard pause > .zero else { return }
        hostPolicies.pause(transfer.host, for: pause)
        let name = transfer.host.name
        events.emit(transfer.id, .hostPaused(host: name, delay: pause))
        telemetry?.metrics?.hostPaused()
        transfer.logger?.debug(
            "pausing a host for the fleet", metadata: ["courier.host": "\(name)", "courier.pause": "\(pause)"])
        hostPauseWrites.start { [backgroundLogger] in
            do {
                try await store.pauseHost(name, for: pause)
            } catch {
                backgroundLogger?.debug(
                    "could not share a host's pause with the fleet",
                    metadata: ["courier.host": "\(name)", "error": "\(error)"])
            }
        }
    }
}

/// Writes of host pauses to the fleet's store still under way, which shutdown waits for:
/// counted when they start (synchronously, with the response that asked for the pause), so a
/// shutdown right after that load still shares it.
final class PendingWrites: Sendable {
    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    /// Runs `write` in a task of its own, counted until it ends.
    func start(_ write: @escaping @Sendable () async -> Void) {
        state.withLock { $0.running += 1 }
        Task {
            await write()
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.running -= 1
                guard state.running == 0 else { return [] }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Returns once no write is under way.
    func drained() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                if state.running == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
