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
            if hostPolicies.guardsAttempts {
                switch admit(attempt, of: transfer, in: hostPolicies, telemetry: telemetry) {
                case .go(let admitted): pass = admitted
                case .refused(let error): return .failure(error)
                }
            }
            let sent = Self.attempt(attempt, of: transfer, telemetry: telemetry)  // the trace context, after the key
            let outcome =
                if transfer.stub == nil && transfer.receiver == nil {
                    if attempt == 1, let hedging = transfer.hedging {
                        await hedged(sent.request, of: transfer, hedging, pass: pass.take(), telemetry: telemetry)
                    } else {
                        await send(sent.request, body: transfer.body, options: transfer.options)
                    }
                } else {
                    await send(
                        sent.request, body: transfer.body, options: transfer.options, stub: transfer.stub,
                        receiver: transfer.receiver)
                }
            switch conclude(
                sent, outcome: outcome, of: transfer, attempt: attempt, pass: pass, telemetry: telemetry)
            {
            case .stands:
                if case .failure = outcome, transfer.deadline != nil {
                    return Self.ended(outcome, of: transfer)
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

    /// `outcome`, a failure, said to be the deadline's when it timed out at `transfer`'s
    /// deadline: the transport reports the total timeout it was given, which the deadline set.
    @inline(never)
    private static func ended(
        _ outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer
    ) -> Result<TransportResponse, ServiceError> {
        guard case .failure(var error) = outcome, error.code == .timedOut, transfer.reachedDeadline
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
        transfer.stampDeadline(on: &sent.request)
        return sent
    }

    /// Ends `sent`'s span with `outcome`, tells the host's circuit, and says what follows.
    @inline(never)
    private nonisolated func conclude(
        _ sent: LoadAttempt, outcome: Result<TransportResponse, ServiceError>, of transfer: PlannedTransfer,
        attempt: Int, pass: HostPolicies.Pass?, telemetry: LoadTelemetry?
    ) -> RetryDecision {
        sent.end(outcome)
        if let pass {
            record(outcome, of: transfer, attempt: attempt, pass: pass, in: hostPolicies, telemetry: telemetry)
        }
        if hostPausingStore != nil { notePause(outcome, of: transfer, telemetry: telemetry) }
        return retryDecision(after: outcome, of: transfer, attempt: attempt, telemetry: telemetry)
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
    nonisolated(nonsending) func send(
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
            var delay = transfer.policy.delay(
                after: outcome, of: transfer.request, attempt: attempt,
                resumesCutBodies: transfer.receiver?.resumesCutBodies == true, now: configuration.now(),
                random: Double.random(in: 0..<1))
        else { return .stands }
        if transfer.stub == nil, let refusal = hostPolicies.refusal(transfer.host, after: delay) {
            switch refusal {
            case .circuit:
                // A circuit that stays open past the pause would refuse the retry anyway.
                refuseRetry(attempt, of: transfer, reason: "circuit", telemetry: telemetry)
                return .stands
            case .paused(let left):
                // The host asked for a pause (its `Retry-After`, or the fleet's): the retry
                // waits it out, as long as the retry policy would wait for a `Retry-After`.
                guard left <= transfer.policy.maximumRetryAfter else {
                    refuseRetry(attempt, of: transfer, reason: "paused", telemetry: telemetry)
                    return .stands
                }
                delay = left
            }
        }
        if let deadline = transfer.deadline, Moment.now + delay >= deadline {
            refuseRetry(attempt, of: transfer, reason: "deadline", telemetry: telemetry)
            return .stands
        }
        if Task.isCancelled || transfer.options.cancellation?.isCancelled == true { return .cancelled }
        if !hostPolicies.retry(to: transfer.host) {
            refuseRetry(attempt, of: transfer, reason: "budget", telemetry: telemetry)
            return .stands
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
    /// When the first attempt sends a hedge (nil: it does not; see ``Hedging``).
    let hedging: Hedging?

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
        hedging = Self.hedging(plan, request: request)
    }

    /// `plan`'s hedging, when its load may hedge: an idempotent request whose body can be sent
    /// twice, answered by the transport whole.
    private static func hedging(_ plan: LoadPlan, request: HTTPRequest) -> Hedging? {
        guard let hedging = plan.hedging, hedging.isEnabled, plan.stub == nil, plan.receiver == nil,
            plan.body?.isReplayable ?? true
        else { return nil }
        switch request.method {
        case .get, .head, .options, .trace, .put, .delete: return hedging
        default: return nil
        }
    }

    /// Writes the whole milliseconds left until ``deadline`` into `request`'s ``deadlineField``,
    /// when the transfer has both.
    func stampDeadline(on request: inout HTTPRequest) {
        guard let field = deadlineField, let deadline else { return }
        let left = deadline - Moment.now
        let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
        request.headerFields[field] = String(max(milliseconds, 0))
    }

    /// Whether the transfer's deadline has come (within 20 ms: curl counts whole milliseconds,
    /// and may end a transfer a little before the instant).
    var reachedDeadline: Bool {
        guard let deadline else { return false }
        return Moment.now + .milliseconds(20) >= deadline
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
        hedging = transfer.hedging
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
