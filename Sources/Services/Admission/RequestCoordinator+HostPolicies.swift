internal import CourierCore
internal import HTTPTypes
internal import Logging
internal import Tracing

/// What each attempt asks of its host's policies (``HostPolicies``) before it goes, and tells
/// them after: the circuit's admission, the retry budget's count, the adaptive limit's sample,
/// and the events, metrics and log lines of what changed.
extension RequestCoordinator {
    /// Whether an attempt may go to the host.
    enum AttemptAdmission {
        /// It goes; its outcome is reported to the host's circuit and adaptive limit with this
        /// pass (nil: neither watches it).
        case go(HostPolicies.Pass?)
        /// The host's circuit is open, or the host is paused: the load ends with this
        /// `circuitOpen` or `hostPaused`.
        case refused(ServiceError)
    }

    /// Asks `transfer`'s host whether attempt `attempt` may go, and counts the load in the
    /// host's retry budget on its first. Loads a responder answers never touch a circuit.
    @inline(never)
    nonisolated func admit(
        _ attempt: Int, of transfer: PlannedTransfer, in policies: HostPolicies, telemetry: LoadTelemetry?
    ) -> AttemptAdmission {
        let watched = transfer.stub == nil && policies.watchesOutcomes
        // A stream's or a download's attempt lasts as long as its body: not a sample of the
        // host's load.
        let admission = policies.admit(
            transfer.host, first: attempt == 1, network: transfer.stub == nil, usesCircuit: watched,
            timesLimit: transfer.receiver == nil)
        switch admission.circuit {
        case .go(let ticket):
            guard watched else { return .go(nil) }
            if ticket.probe {
                telemetry?.span?.attributes["courier.circuit"] = "probe"
                transfer.logger?.debug("probing an open circuit", metadata: ["courier.host": "\(transfer.host.name)"])
            }
            return .go(HostPolicies.Pass(ticket: ticket, sentAt: admission.now, inFlight: admission.inFlight))
        case .refuse(let until):
            if let paused = admission.pausedUntil {
                telemetry?.span?.attributes["courier.host.paused"] = true
                return .refused(.hostPaused(transfer.host.name, retryAfter: paused - admission.now))
            }
            telemetry?.span?.attributes["courier.circuit"] = "open"
            return .refused(.circuitOpen(transfer.host.name, retryAfter: until.map { $0 - admission.now }))
        }
    }

    /// Tells `transfer`'s host's circuit how an attempt ended, and reports what changed: an
    /// event, a metric and a debug line.
    nonisolated func record(
        _ outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer, attempt: Int,
        pass: HostPolicies.Pass, in policies: HostPolicies, telemetry: LoadTelemetry?
    ) {
        let (judged, sample) = HostPolicies.judge(
            outcome, cutByTheLoad: { error in Self.cutByTheLoad(error, of: transfer, attempt: attempt) })
        let changes = policies.record(transfer.host, judged, sample: sample, pass: pass)
        if let limit = changes.limit {
            limitChanged(transfer, to: limit, version: changes.limitVersion, telemetry: telemetry)
        }
        switch changes.circuit {
        case .none:
            return
        case .opened(let coolDown):
            events.emit(transfer.id, .circuitOpened(host: transfer.host.name, coolDown: coolDown))
            telemetry?.metrics?.circuit(state: "open")
            transfer.logger?.debug(
                "circuit opened",
                metadata: ["courier.host": "\(transfer.host.name)", "courier.circuit.cool_down": "\(coolDown)"])
        case .closed:
            events.emit(transfer.id, .circuitClosed(host: transfer.host.name))
            telemetry?.metrics?.circuit(state: "closed")
            transfer.logger?.debug("circuit closed", metadata: ["courier.host": "\(transfer.host.name)"])
        }
    }

    /// Hands `transfer`'s host's new adaptive limit to the host queue, and reports it: an
    /// event, a gauge and a debug line.
    private nonisolated func limitChanged(
        _ transfer: PlannedTransfer, to limit: Int, version: UInt64, telemetry: LoadTelemetry?
    ) {
        hostQueue?.setLimit(transfer.host, to: limit, version: version)
        events.emit(transfer.id, .limitChanged(host: transfer.host.name, limit: limit))
        telemetry?.metrics?.hostLimit(limit, host: transfer.host.name)
        transfer.logger?.trace(
            "adaptive limit moved", metadata: ["courier.host": "\(transfer.host.name)", "courier.limit": "\(limit)"])
    }

    /// Whether `error` is a timeout the load brought on itself rather than the host: its
    /// deadline (a caller's `X-Deadline-Ms: 1` must not open a circuit for everyone), a first
    /// attempt whose timeout a wait for its turn had shortened, or a wait for a connection in
    /// the transport's own pool.
    private static func cutByTheLoad(_ error: ServiceError, of transfer: PlannedTransfer, attempt: Int) -> Bool {
        guard error.code == .timedOut else { return false }
        if error.underlying is TransportWait { return true }
        if attempt == 1, transfer.retryTimeout != nil { return true }
        return transfer.reachedDeadline
    }
}
