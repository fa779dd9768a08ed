internal import CourierCore
internal import HTTPTypes
internal import Logging
internal import Tracing

/// A hedged first attempt: the request sent once, and once more when the first is still out
/// after the hedge's delay; the first decisive answer wins and the other attempt is cancelled.
extension RequestCoordinator {
    /// What one side of a hedged attempt brings back.
    private enum Racer: Sendable {
        /// The first attempt's outcome.
        case first(Result<TransportResponse, ServiceError>)
        /// The hedge's outcome, and its pass to report it with.
        case hedge(Result<TransportResponse, ServiceError>, HostPolicies.Pass?)
        /// No hedge went: the race ended before its delay, or the host refused it.
        case none
    }

    /// Sends `request`, the first attempt of `transfer`, hedged as `hedging` says; reports both
    /// attempts to the host's policies (the first with `pass`) and the winner's time to its
    /// hedging state.
    nonisolated(nonsending) func hedged(
        _ request: HTTPRequest, of transfer: PlannedTransfer, _ hedging: Hedging, pass: HostPolicies.Pass?,
        telemetry: LoadTelemetry?
    ) async -> Result<TransportResponse, ServiceError> {
        let (delay, sentAt) = hostPolicies.hedgedLoadSent(to: transfer.host, hedging)
        guard let delay else {
            let outcome = await send(request, body: transfer.body, options: transfer.options)
            if let pass {
                record(outcome, of: transfer, attempt: 1, pass: pass, in: hostPolicies, telemetry: telemetry)
            }
            if case .success = outcome { hostPolicies.answered(transfer.host, sentAt: sentAt) }
            return outcome
        }
        // Two transfers at once: shutdown cancels the race, which cancels both.
        guard let cancellation = transfer.options.cancellation else {
            return await race(request, of: transfer, hedging, after: delay, pass: pass, sentAt: sentAt, telemetry)
        }
        do {
            return try await cancellation.run {
                await self.race(request, of: transfer, hedging, after: delay, pass: pass, sentAt: sentAt, telemetry)
            }
        } catch {
            return .failure(.cancelled())
        }
    }

    /// The race itself, in a task group whose cancellation cancels both attempts.
    private nonisolated func race(
        _ request: HTTPRequest, of transfer: PlannedTransfer, _ hedging: Hedging, after delay: Duration,
        pass: HostPolicies.Pass?, sentAt: Duration, _ telemetry: LoadTelemetry?
    ) async -> Result<TransportResponse, ServiceError> {
        let options = Self.withoutCancellation(transfer.options)
        let state = LockedValue(HedgeRace())
        return await withTaskGroup(of: Racer.self) { group in
            group.addTask { .first(await self.send(request, body: transfer.body, options: options)) }
            group.addTask {
                await self.hedge(request, of: transfer, hedging, after: delay, options: options, race: state, telemetry)
            }
            var winner: Result<TransportResponse, ServiceError>?
            var held: Result<TransportResponse, ServiceError>?
            while let racer = await group.next() {
                let outcome: Result<TransportResponse, ServiceError>
                let verdict: HedgeRace.Verdict
                switch racer {
                case .none:
                    verdict = state.withLock { $0.hedgeNotSent() }
                    guard verdict == .takeHeld, let held else { continue }
                    outcome = held
                case .first(let result):
                    outcome = result
                    if let pass {
                        record(result, of: transfer, attempt: 1, pass: pass, in: hostPolicies, telemetry: telemetry)
                    }
                    let decisive = decides(result, of: transfer)
                    verdict = state.withLock { $0.ended(.first, decisive: decisive) }
                case .hedge(let result, let hedgePass):
                    outcome = result
                    if let hedgePass {
                        record(
                            result, of: transfer, attempt: 1, pass: hedgePass, in: hostPolicies, telemetry: telemetry)
                    }
                    let decisive = decides(result, of: transfer)
                    verdict = state.withLock { $0.ended(.hedge, decisive: decisive) }
                    if verdict == .take, decisive { hedgeWon(transfer, telemetry: telemetry) }
                }
                // The outcome that wins is noted by the retry loop, like any attempt's; those
                // that lose, here.
                if hostPausingStore != nil, verdict == .ignore {
                    notePause(outcome, of: transfer, telemetry: telemetry)
                }
                switch verdict {
                case .hold:
                    held = outcome
                case .take, .takeHeld:
                    if verdict == .take, hostPausingStore != nil, let held {  // it lost
                        notePause(held, of: transfer, telemetry: telemetry)
                    }
                    winner = outcome
                    if case .success = outcome { hostPolicies.answered(transfer.host, sentAt: sentAt) }
                    group.cancelAll()
                case .ignore:
                    break
                }
            }
            return winner ?? held ?? .failure(.cancelled())
        }
    }

    private static func withoutCancellation(_ options: TransferOptions) -> TransferOptions {
        var options = options
        options.cancellation = nil
        return options
    }

    /// The hedge: after `delay`, if the race is still on and the host allows it, the request
    /// once more.
    private nonisolated func hedge(
        _ request: HTTPRequest, of transfer: PlannedTransfer, _ hedging: Hedging, after delay: Duration,
        options: TransferOptions, race: LockedValue<HedgeRace>, _ telemetry: LoadTelemetry?
    ) async -> Racer {
        do {
            try await configuration.clock.sleep(for: delay)
        } catch {
            return .none
        }
        guard race.withLock({ $0.hedgeWakes() }) else { return .none }
        // An open circuit or a pause refuses the hedge before it spends any budget.
        if let refusal = hostPolicies.refusal(transfer.host, after: .zero) {
            hedgeRefused(transfer, reason: refusal == .circuit ? "circuit" : "paused", telemetry: telemetry)
            return .none
        }
        if let reason = hostPolicies.hedge(to: transfer.host, hedging) {
            hedgeRefused(transfer, reason: reason, telemetry: telemetry)
            return .none
        }
        var pass: HostPolicies.Pass?
        if hostPolicies.guardsAttempts {
            switch admit(2, of: transfer, in: hostPolicies, telemetry: telemetry) {
            case .go(let admitted): pass = admitted
            case .refused(let error):
                hedgeRefused(transfer, reason: error.code == .hostPaused ? "paused" : "circuit", telemetry: telemetry)
                return .none
            }
        }
        // Decided while this hedge was being let through: it does not go.
        if Task.isCancelled {
            if let pass {
                record(
                    .failure(.cancelled()), of: transfer, attempt: 1, pass: pass, in: hostPolicies,
                    telemetry: telemetry)
            }
            return .none
        }
        var request = request
        transfer.stampDeadline(on: &request)  // what is left now, not when the first went
        events.emit(transfer.id, .hedged(host: transfer.host.name, delay: delay))
        telemetry?.metrics?.hedge(outcome: "sent")
        telemetry?.span?.attributes["courier.hedge"] = "sent"
        transfer.logger?.debug(
            "hedging", metadata: ["courier.host": "\(transfer.host.name)", "courier.hedge.delay": "\(delay)"])
        let outcome = await send(request, body: transfer.body, options: options)
        return .hedge(outcome, pass)
    }

    /// Whether `outcome` ends the race: anything the retry policy would not repeat.
    private nonisolated func decides(_ outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer)
        -> Bool
    {
        if case .failure(let error) = outcome, error.code == .cancelled { return false }
        return transfer.policy.delay(
            after: outcome, of: transfer.request, attempt: 1, resumesCutBodies: false, now: configuration.now(),
            random: 0) == nil
    }

    private nonisolated func hedgeWon(_ transfer: PlannedTransfer, telemetry: LoadTelemetry?) {
        telemetry?.metrics?.hedge(outcome: "won")
        telemetry?.span?.attributes["courier.hedge"] = "won"
        transfer.logger?.debug("the hedge answered first", metadata: ["courier.host": "\(transfer.host.name)"])
    }

    private nonisolated func hedgeRefused(_ transfer: PlannedTransfer, reason: String, telemetry: LoadTelemetry?) {
        telemetry?.metrics?.hedge(outcome: "refused", reason: reason)
        telemetry?.span?.attributes["courier.hedge"] = "refused"
        transfer.logger?.debug(
            "not hedging", metadata: ["courier.host": "\(transfer.host.name)", "courier.hedge.refused": "\(reason)"])
    }
}
