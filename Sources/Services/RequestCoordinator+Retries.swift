internal import CourierCore
internal import HTTPTypes
internal import Logging

/// One transfer, repeated as the retry policy allows. Split so that the function waiting for
/// the network, whose frame lives as long as the transfer, keeps only what it needs: the
/// decision to retry and its report are synchronous, and loads sent straight to the transport
/// (no responder, no receiver) go through the smallest function.
extension RequestCoordinator {
    /// One transfer, repeated as `policy` allows, waiting on the configured clock.
    nonisolated func transferWithRetries(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions, policy: RetryPolicy, id: UInt64,
        logger: Logger?, stub: LoadPlan.Stub? = nil, receiver: (any ResponseReceiver)? = nil
    ) async -> Result<TransportResponse, ServiceError> {
        var attempt = 1
        let telemetry = LoadTelemetry.current
        while true {
            let sent = LoadAttempt(attempt, of: request, telemetry: telemetry)  // the trace context, after the key
            let outcome =
                if stub == nil && receiver == nil {
                    await send(sent.request, body: body, options: options)
                } else {
                    await send(sent.request, body: body, options: options, stub: stub, receiver: receiver)
                }
            sent.end(outcome)
            guard
                let delay = retryDelay(
                    after: outcome, of: request, attempt: attempt, policy: policy, id: id, logger: logger,
                    resumesCutBodies: receiver?.resumesCutBodies == true)
            else { return outcome }
            do {
                try await configuration.clock.sleep(for: delay)
            } catch {
                return .failure(.cancelled())
            }
            attempt += 1
        }
    }

    /// One attempt through the transport.
    @inline(never)
    private nonisolated func send(
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
    private nonisolated func send(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions, stub: LoadPlan.Stub?,
        receiver: (any ResponseReceiver)?
    ) async -> Result<TransportResponse, ServiceError> {
        do {
            if let receiver {
                return .success(
                    try await receiver.receive(request) { request in
                        guard let stub else {
                            return try await self.transport.sendStreaming(request, body: body, options: options)
                        }
                        let response = try await stub.respond(request)
                        return StreamingTransportResponse(
                            head: response.head, metrics: response.metrics, body: .bytes(response.body))
                    })
            }
            guard let stub else { return await send(request, body: body, options: options) }
            return .success(try await stub.respond(request))
        } catch {
            return .failure(ServiceError.wrapping(error))
        }
    }

    /// How long to wait before attempt `attempt + 1`, reported as an event and a debug line;
    /// nil when `outcome` stands (the policy says so, or the load was cancelled).
    @inline(never)
    private nonisolated func retryDelay(
        after outcome: Result<TransportResponse, ServiceError>, of request: HTTPRequest, attempt: Int,
        policy: RetryPolicy, id: UInt64, logger: Logger?, resumesCutBodies: Bool
    ) -> Duration? {
        guard !Task.isCancelled,
            let delay = policy.delay(
                after: outcome, of: request, attempt: attempt, resumesCutBodies: resumesCutBodies,
                now: configuration.now(), random: Double.random(in: 0..<1))
        else { return nil }
        let reason: String
        switch outcome {
        case .success(let response): reason = "HTTP \(response.head.status.code)"
        case .failure(let error): reason = error.code.description
        }
        events.emit(id, .retried(attempt: attempt, delay: delay, reason: reason))
        logger?.debug("retrying", metadata: ["courier.retry.attempt": "\(attempt)", "courier.retry.reason": "\(reason)"])
        return delay
    }
}
