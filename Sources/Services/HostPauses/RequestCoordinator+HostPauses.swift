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
                        if policies.pause(host, for: left) {
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
        guard let store = hostPausingStore, transfer.stub == nil, case .success(let response) = outcome else { return }
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
        Self.startBackground(on: self) { coordinator in
            do {
                try await store.pauseHost(name, for: pause)
            } catch {
                coordinator.backgroundLogger?.debug(
                    "could not share a host's pause with the fleet",
                    metadata: ["courier.host": "\(name)", "error": "\(error)"])
            }
        }
    }
}
