internal import CourierCore
internal import HTTPTypes
internal import Logging
internal import Tracing

/// One transfer, repeated as the retry policy allows. Split so that the function waiting for
/// the network, whose frame lives as long as the transfer, keeps only what it needs: the
/// decision to retry and its report are synchronous, and loads sent straight to the transport
/// (no responder, no receiver) go through the smallest function.
extension RequestCoordinator {
    /// One transfer, repeated as its retry policy allows, waiting on the configured clock.
    ///
    /// Its frame lives as long as the transfer: what happens before and after each attempt is
    /// done in synchronous helpers, so the frame keeps little more than the attempt's result.
    nonisolated(nonsending) func transferWithRetries(
        _ transfer: PlannedTransfer, from first: Int = 1
    ) async -> Result<TransportResponse, ServiceError> {
        var attempt = first
        let telemetry = LoadTelemetry.current
        while true {
            var pass: HostPolicies.Pass?
            if let hostPolicies {
                switch admit(attempt, of: transfer, in: hostPolicies, telemetry: telemetry) {
                case .go(let admitted): pass = admitted
                case .refused(let error): return .failure(error)
                }
            }
            let sent = Self.attempt(attempt, of: transfer, telemetry: telemetry)  // the trace context, after the key
            let outcome =
                if transfer.stub == nil && transfer.receiver == nil {
                    await send(sent.request, body: transfer.body, options: transfer.options)
                } else {
                    await send(
                        sent.request, body: transfer.body, options: transfer.options, stub: transfer.stub,
                        receiver: transfer.receiver)
                }
            switch conclude(
                sent, outcome: outcome, of: transfer, attempt: attempt, pass: pass, telemetry: telemetry)
            {
            case .stands:
                if case .failure = outcome, let deadline = transfer.deadline {
                    return Self.ended(outcome, by: deadline)
                }
                return outcome
            // Not what the transfer gave, but what ended it: a leader that leaves hands its
            // flight over only when its transfer ended `cancelled`.
            case .cancelled: return .failure(.cancelled())
            case .retry(let delay):
                guard await pause(for: delay, cancellation: transfer.options.cancellation) else {
                    return .failure(.cancelled())
                }
                // The first attempt had what a wait for its turn left of the timeout; the
                // retries get all of it (rare: the transfer stays a constant, which the hot
                // path passes its options from without a copy).
                if attempt == 1, transfer.retryTimeout != nil {
                    return await transferWithRetries(transfer.forRetries(), from: 2)
                }
            }
            attempt += 1
        }
    }

    /// `outcome`, a failure, said to be the deadline's when it timed out at `deadline`: the
    /// transport reports the total timeout it was given, which the deadline set.
    @inline(never)
    private static func ended(
        _ outcome: Result<TransportResponse, ServiceError>, by deadline: Moment
    ) -> Result<TransportResponse, ServiceError> {
        // curl counts whole milliseconds, and may end a transfer a little before the instant.
        guard case .failure(var error) = outcome, error.code == .timedOut,
            Moment.now + .milliseconds(20) >= deadline
        else { return outcome }
        error.message =
            "The load reached its deadline (a withDeadline scope, or the coordinator's loadBudget). "
            + error.message
        return .failure(error)
    }

    /// Attempt `attempt` of `transfer`: its request, with the trace context and the time left
    /// until its deadline (``Configuration/deadlineField``).
    @inline(never)
    private static func attempt(_ attempt: Int, of transfer: PlannedTransfer, telemetry: LoadTelemetry?) -> LoadAttempt
    {
        var sent = LoadAttempt(attempt, of: transfer.request, telemetry: telemetry)
        if let field = transfer.deadlineField, let deadline = transfer.deadline {
            let left = deadline - Moment.now
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            sent.request.headerFields[field] = String(max(milliseconds, 0))
        }
        return sent
    }

    /// Whether an attempt may go to the host.
    enum AttemptAdmission {
        /// It goes; its outcome is reported to the host's circuit and adaptive limit with this
        /// pass (nil: neither watches it).
        case go(HostPolicies.Pass?)
        /// The host's circuit is open: the load ends with this `circuitOpen`.
        case refused(ServiceError)
    }

    /// Asks `transfer`'s host whether attempt `attempt` may go, and counts the load in the
    /// host's retry budget on its first. Loads a responder answers never touch a circuit.
    @inline(never)
    private nonisolated func admit(
        _ attempt: Int, of transfer: PlannedTransfer, in policies: HostPolicies, telemetry: LoadTelemetry?
    ) -> AttemptAdmission {
        let watched = transfer.stub == nil && policies.watchesOutcomes
        // A stream's or a download's attempt lasts as long as its body: not a sample of the
        // host's load.
        let admission = policies.admit(
            transfer.host, first: attempt == 1, usesCircuit: watched, timesLimit: transfer.receiver == nil)
        switch admission.circuit {
        case .go(let ticket):
            guard watched else { return .go(nil) }
            if ticket.probe {
                telemetry?.span?.attributes["courier.circuit"] = "probe"
                transfer.logger?.debug("probing an open circuit", metadata: ["courier.host": "\(transfer.host.name)"])
            }
            return .go(HostPolicies.Pass(ticket: ticket, sentAt: admission.now, inFlight: admission.inFlight))
        case .refuse(let until):
            telemetry?.span?.attributes["courier.circuit"] = "open"
            return .refused(.circuitOpen(transfer.host.name, retryAfter: until.map { $0 - admission.now }))
        }
    }

    /// Ends `sent`'s span with `outcome`, tells the host's circuit, and says what follows.
    @inline(never)
    private nonisolated func conclude(
        _ sent: LoadAttempt, outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer,
        attempt: Int, pass: HostPolicies.Pass?, telemetry: LoadTelemetry?
    ) -> RetryDecision {
        sent.end(outcome)
        if let hostPolicies, let pass {
            record(outcome, of: transfer, attempt: attempt, pass: pass, in: hostPolicies, telemetry: telemetry)
        }
        return retryDecision(after: outcome, of: transfer, attempt: attempt, telemetry: telemetry)
    }

    /// Tells `transfer`'s host's circuit how an attempt ended, and reports what changed: an
    /// event, a metric and a debug line.
    private nonisolated func record(
        _ outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer, attempt: Int,
        pass: HostPolicies.Pass, in policies: HostPolicies, telemetry: LoadTelemetry?
    ) {
        let status: Int?
        let failed: Bool?
        switch outcome {
        case .success(let response):
            status = response.head.status.code
            failed = CircuitBreaker.isFailure(status: status, error: nil)
        case .failure(let error):
            status = error.status?.code
            failed =
                Self.cutByTheLoad(error, of: transfer, attempt: attempt)
                ? nil : CircuitBreaker.isFailure(status: status, error: error)
        }
        // For the adaptive limit, a 429 says overloaded too (a circuit leaves it to Retry-After);
        // only a plain 2xx over an open connection times the host's load.
        let sample: AdaptiveLimitMachine.Sample
        switch (failed, outcome) {
        case (nil, _): sample = .ignored
        case (true?, _): sample = .overloaded
        case (false?, .success(let response)):
            let metrics = response.metrics
            sample =
                status == 429
                ? .overloaded
                : (200..<300).contains(status ?? 0) && status != 304 && metrics.newConnections == 0
                    && metrics.redirectCount == 0 ? .timed : .answered
        case (false?, .failure): sample = status == 429 ? .overloaded : .answered
        }
        let changes = policies.record(
            transfer.host, failed.map { $0 ? .failure : .success } ?? .abandoned, sample: sample, pass: pass)
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
        guard let deadline = transfer.deadline else { return false }
        return Moment.now + .milliseconds(20) >= deadline
    }

    /// Waits `delay` on the configured clock before the next attempt; false when the task, or
    /// the transfer's `cancellation` (shutdown, for a load on its own task), is cancelled first.
    @inline(never)
    private nonisolated(nonsending) func pause(for delay: Duration, cancellation: TransferCancellation?) async -> Bool {
        let clock = configuration.clock
        do {
            if let cancellation {
                try await cancellation.run { try await clock.sleep(for: delay) }
            } else {
                try await clock.sleep(for: delay)
            }
            return true
        } catch {
            return false
        }
    }

    /// One attempt through the transport.
    @inline(never)
    private nonisolated(nonsending) func send(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions
    ) async -> Result<TransportResponse, ServiceError> {
        do {
            return .success(try await transport.send(request, body: body, options: options))
        } catch {
            return .failure(ServiceError.wrapping(error))
        }
    }

    /// One attempt answered by the configuration's responder, or received by `receiver`.
    @inline(never)
    private nonisolated(nonsending) func send(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions, stub: LoadPlan.Stub?,
        receiver: (any ResponseReceiver)?
    ) async -> Result<TransportResponse, ServiceError> {
        do {
            if let receiver {
                return .success(
                    try await receiver.receive(request) { request in
                        guard let stub else {
                            return try await self.transport.stream(request, body: body, options: options)
                        }
                        let response = try await stub.respond(request)
                        return StreamingTransportResponse(
                            head: response.head, metrics: response.metrics,
                            body: .bytes(response.body, trailers: response.trailers))
                    })
            }
            guard let stub else { return await send(request, body: body, options: options) }
            return .success(try await stub.respond(request))
        } catch {
            return .failure(ServiceError.wrapping(error))
        }
    }

    enum RetryDecision {
        /// The policy keeps the outcome.
        case stands
        /// The policy would retry, but the load was cancelled (its task, or shutdown).
        case cancelled
        /// Another attempt after this long.
        case retry(after: Duration)
    }

    /// Reports a retry the policy wanted and `reason` (`deadline`, `circuit`, `budget`)
    /// refused: an event, a metric, a span
    /// attribute and a debug line.
    private nonisolated func refuseRetry(
        _ attempt: Int, of transfer: PlannedTransfer, reason: String, telemetry: LoadTelemetry?
    ) {
        events.emit(transfer.id, .retryRefused(attempt: attempt, reason: reason))
        telemetry?.metrics?.retryRefused(method: transfer.request.method.rawValue, reason: reason)
        telemetry?.span?.attributes["courier.retry.refused"] = reason
        transfer.logger?.debug(
            "not retrying", metadata: ["courier.retry.attempt": "\(attempt)", "courier.retry.refused": "\(reason)"])
    }

    /// Whether `outcome` stands, and else how long to wait before attempt `attempt + 1`,
    /// reported as an event and a debug line.
    @inline(never)
    private nonisolated func retryDecision(
        after outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer, attempt: Int,
        telemetry: LoadTelemetry?
    ) -> RetryDecision {
        // A streamed body was read by the first attempt: there is nothing to send again.
        if transfer.body?.isReplayable == false { return .stands }
        guard
            let delay = transfer.policy.delay(
                after: outcome, of: transfer.request, attempt: attempt,
                resumesCutBodies: transfer.receiver?.resumesCutBodies == true, now: configuration.now(),
                random: Double.random(in: 0..<1))
        else { return .stands }
        if let deadline = transfer.deadline, Moment.now + delay >= deadline {
            refuseRetry(attempt, of: transfer, reason: "deadline", telemetry: telemetry)
            return .stands
        }
        if Task.isCancelled || transfer.options.cancellation?.isCancelled == true { return .cancelled }
        if let hostPolicies {
            // A circuit that stays open past the pause would refuse the retry anyway.
            if transfer.stub == nil, hostPolicies.refuses(transfer.host, after: delay) {
                refuseRetry(attempt, of: transfer, reason: "circuit", telemetry: telemetry)
                return .stands
            }
            if !hostPolicies.retry(to: transfer.host) {
                refuseRetry(attempt, of: transfer, reason: "budget", telemetry: telemetry)
                return .stands
            }
        }
        let reason: String
        switch outcome {
        case .success(let response): reason = "HTTP \(response.head.status.code)"
        case .failure(let error): reason = error.code.description
        }
        events.emit(transfer.id, .retried(attempt: attempt, delay: delay, reason: reason))
        transfer.logger?.debug(
            "retrying", metadata: ["courier.retry.attempt": "\(attempt)", "courier.retry.reason": "\(reason)"])
        return .retry(after: delay)
    }
}

/// What every attempt of one load's transfer sends, in one box: the retry loop holds a
/// reference across its `await`s rather than a copy of each part.
final class PlannedTransfer: Sendable {
    let request: HTTPRequest
    let body: RequestBody?
    let options: TransferOptions
    let policy: RetryPolicy
    let id: UInt64
    let logger: Logger?
    let stub: LoadPlan.Stub?
    let receiver: (any ResponseReceiver)?
    /// The retries' total timeout when the first attempt has less (``LoadPlan/retryTimeout``).
    let retryTimeout: Duration??
    /// When the load must end (``LoadPlan/deadline``): every attempt ends by then, and no
    /// retry waits past it.
    let deadline: Moment?
    /// Where each attempt says how long is left until ``deadline``, if anywhere.
    let deadlineField: HTTPField.Name?
    /// The request's host, whose retry budget and circuit each attempt consults.
    let host: HostQueue.Host

    init(
        _ request: HTTPRequest, plan: LoadPlan, cancellation: TransferCancellation? = nil,
        deadlineField: HTTPField.Name? = nil
    ) {
        self.request = request
        host = HostQueue.Host(request)
        body = plan.body
        var options = plan.options
        options.cancellation = cancellation
        // `execute` validated the request; a receiver may change it (a range to resume), so the
        // transport checks again then.
        options.requestIsValidated = plan.receiver == nil
        let deadline = plan.deadline
        options.deadline = deadline
        self.deadline = deadline
        self.deadlineField = deadlineField
        self.options = options
        policy = plan.retryPolicy
        id = plan.id
        logger = plan.logger
        stub = plan.stub
        receiver = plan.receiver
        retryTimeout = plan.retryTimeout
    }

    /// This transfer with `timeout` as its total timeout, for its retries.
    private init(_ transfer: PlannedTransfer, timeout: Duration?) {
        request = transfer.request
        host = transfer.host
        body = transfer.body
        var options = transfer.options
        options.timeout = timeout
        self.options = options
        policy = transfer.policy
        id = transfer.id
        logger = transfer.logger
        stub = transfer.stub
        receiver = transfer.receiver
        retryTimeout = nil
        deadline = transfer.deadline
        deadlineField = transfer.deadlineField
    }

    /// What the attempts after the first send: this transfer, or a copy with the total timeout
    /// its first attempt did not have.
    @inline(never)
    func forRetries() -> PlannedTransfer {
        guard let timeout = retryTimeout else { return self }
        return PlannedTransfer(self, timeout: timeout)
    }
}
