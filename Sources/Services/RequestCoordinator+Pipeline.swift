internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

extension RequestCoordinator {
    /// Runs one load: events and logs around the cache, decoration, transfer and `finish`.
    nonisolated func run<T: Sendable>(
        _ plan: LoadPlan, intent: CacheIntent<T> = .load,
        finish: @escaping @Sendable (Execution) async throws -> T
    ) async throws(ServiceError) -> T {
        if let operation = plan.operation { events.setOperation(operation, for: plan.id) }
        defer { if plan.operation != nil { events.setOperation(nil, for: plan.id) } }
        events.emit(plan.id, .started(method: plan.request.method, url: plan.loggableURL))
        plan.logger?.debug(
            "load started", metadata: ["courier.http.method": "\(plan.request.method)", "courier.url": "\(plan.loggableURL)"])
        var status: Int?
        let telemetry = LoadTelemetry.start(plan, configuration: configuration, background: intent.isRefresh)
        do {
            if let error = plan.buildError { throw error }
            let (value, execution) = try await LoadTelemetry.run(telemetry) {
                try await deliver(plan, intent: intent, finish: finish)
            }
            let code = execution.response.head.status.code
            status = code
            telemetry?.finished(execution, duration: ContinuousClock.now - plan.started)
            // The clock is read only when someone listens.
            events.emit(
                plan.id,
                .finished(status: execution.response.head.status, metrics: execution.response.metrics, duration: ContinuousClock.now - plan.started))
            plan.logger?.debug(
                "load finished",
                metadata: ["courier.http.status": "\(code)", "courier.duration": "\(ContinuousClock.now - plan.started)",
                    "courier.coalesced": "\(execution.wasCoalesced)", "courier.source": "\(execution.source)"])
            return value
        } catch {
            let error = ServiceError.wrapping(error)
            let duration = ContinuousClock.now - plan.started
            telemetry?.failed(error, status: error.status?.code ?? status, duration: duration)
            events.emit(
                plan.id,
                .failed(code: error.code, status: error.status ?? status.map { HTTPResponse.Status(code: $0) }, duration: duration))
            // Debug, not info: the caller gets the error; a 404 is not an incident.
            plan.logger?.debug(
                "load failed", metadata: ["courier.error.code": "\(error.code)", "courier.error.message": "\(error.message)"])
            throw error
        }
    }

    /// The value and what produced it: through the cache when the plan's policy uses it (or
    /// when an unsafe method must invalidate), else straight from the network.
    nonisolated func deliver<T: Sendable>(
        _ plan: LoadPlan, intent: CacheIntent<T>, finish: @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        if let cache = configuration.cache, plan.cachePolicy.usesCache || plan.request.method != .get {
            return try await runCached(plan, cache: cache, intent: intent, finish: finish)
        }
        if plan.cachePolicy.mode == .cacheOnly {
            throw ServiceError(.cacheMiss, "This coordinator has no cache, and the resource is cache-only.")
        }
        if plan.request.headerFields[.cacheControl] != nil, CacheControl(plan.request.headerFields).contains("only-if-cached") {
            throw ServiceError(.cacheMiss, "The request says only-if-cached, and its load does not read the cache.")
        }
        let execution = try await execute(plan)
        return (try await finish(execution), execution)
    }

    /// Runs the decorators, in order, on the plan's request.
    nonisolated func decorate(_ plan: LoadPlan) async throws -> HTTPRequest {
        var request = plan.request
        for decorator in plan.decorators {
            do {
                try await decorator.decorate(&request, body: plan.body)
            } catch {
                throw Self.decorationFailure(error, decorator: decorator)
            }
        }
        if !plan.decorators.isEmpty { events.emit(plan.id, .decorated(count: plan.decorators.count)) }
        return request
    }

    /// Decorates (unless `decorated` is the request already decorated), adds `extraFields`
    /// (conditional headers), sends (sharing identical transfers) and lets decorators ask for
    /// one replay.
    nonisolated func execute(
        _ plan: LoadPlan, decorated: HTTPRequest? = nil, extraFields: HTTPFields = [:]
    ) async throws -> Execution {
        var replayed = false
        var first = decorated
        while true {
            if Task.isCancelled { throw ServiceError.cancelled() }
            var request: HTTPRequest
            if let ready = first {
                request = ready
                first = nil
            } else {
                request = try await decorate(plan)
            }
            for field in extraFields { request.headerFields[field.name] = field.value }
            try RequestValidation.validate(request)

            let outcome = await transfer(request, plan: plan).map { execution in
                var execution = execution
                execution.request = request
                return execution
            }
            if case .success(let execution) = outcome {
                for observer in plan.observers {
                    observer.observe(
                        execution.response.head, redirects: execution.response.metrics.redirectCount, of: request)
                }
            }
            if replayed || plan.decorators.isEmpty { return try outcome.get() }
            let decoratedOutcome: DecoratedOutcome
            switch outcome {
            case .success(let execution): decoratedOutcome = .response(execution.response.head)
            case .failure(let error) where error.code == .cancelled || error.code == .redundantRequest
                || error.code == .shutDown:
                throw error
            case .failure(let error): decoratedOutcome = .failure(error)
            }
            var replay = false
            for decorator in plan.decorators {
                do {
                    if try await decorator.inspect(decoratedOutcome, of: request) == .replay { replay = true }
                } catch {
                    throw Self.decorationFailure(error, decorator: decorator)
                }
            }
            guard replay else { return try outcome.get() }
            replayed = true
            events.emit(plan.id, .replayed)
            plan.logger?.debug("load replayed at a decorator's request")
        }
    }

    /// Sends `request` with retries, as its own transfer or joined to an identical one.
    nonisolated func transfer(_ request: HTTPRequest, plan: LoadPlan) async -> Result<Execution, ServiceError> {
        // A body streamed from files is never compared: no key, so the load never shares.
        let key = plan.coalescing == .never
            ? nil
            : FlightKey(
                request, body: plan.body, ignoring: configuration.headersIgnoredForCoalescing, tag: plan.stub?.tag,
                partitions: plan.observers.isEmpty ? [] : plan.observers.compactMap(\.coalescingPartition))
        var validated = plan.options
        // `execute` validated the request; a receiver may change it (a range to resume), so the
        // transport checks again then.
        validated.requestIsValidated = plan.receiver == nil
        let body = plan.body, options = validated, policy = plan.retryPolicy, id = plan.id
        let logger = plan.logger, stub = plan.stub, receiver = plan.receiver
        return await flights.run(
            id: id, key: key, rejectsDuplicates: plan.coalescing == .rejectDuplicates,
            transportExecutor: transport.taskExecutor, reportsShutDown: receiver != nil,
            joined: { events.emit(id, .coalesced) }
        ) {
            await self.transferWithRetries(
                request, body: body, options: options, policy: policy, id: id, logger: logger, stub: stub,
                receiver: receiver)
        }
    }

    /// One transfer, repeated as `policy` allows, waiting on the configured clock.
    nonisolated func transferWithRetries(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions, policy: RetryPolicy, id: UInt64,
        logger: Logger?, stub: LoadPlan.Stub? = nil, receiver: (any ResponseReceiver)? = nil
    ) async -> Result<TransportResponse, ServiceError> {
        var attempt = 1
        let telemetry = LoadTelemetry.current
        while true {
            let outcome: Result<TransportResponse, ServiceError>
            let sent = LoadAttempt(attempt, of: request, telemetry: telemetry)  // the trace context, after the key
            do {
                if let receiver {
                    outcome = .success(
                        try await receiver.receive(sent.request) { request in
                            guard let stub else {
                                return try await self.transport.sendStreaming(request, body: body, options: options)
                            }
                            let response = try await stub.respond(request)
                            return StreamingTransportResponse(
                                head: response.head, metrics: response.metrics, body: .bytes(response.body))
                        })
                } else if let stub {
                    outcome = .success(try await stub.respond(sent.request))
                } else {
                    outcome = .success(try await transport.send(sent.request, body: body, options: options))
                }
            } catch {
                outcome = .failure(ServiceError.wrapping(error))
            }
            sent.end(outcome)
            guard !Task.isCancelled,
                let delay = policy.delay(
                    after: outcome, of: request, attempt: attempt, resumesCutBodies: receiver?.resumesCutBodies == true,
                    now: configuration.now(), random: Double.random(in: 0..<1))
            else { return outcome }
            let reason: String
            switch outcome {
            case .success(let response): reason = "HTTP \(response.head.status.code)"
            case .failure(let error): reason = error.code.description
            }
            events.emit(id, .retried(attempt: attempt, delay: delay, reason: reason))
            logger?.debug("retrying", metadata: ["courier.retry.attempt": "\(attempt)", "courier.retry.reason": "\(reason)"])
            do {
                try await configuration.clock.sleep(for: delay)
            } catch {
                return .failure(.cancelled())
            }
            attempt += 1
        }
    }

    static func decorationFailure(_ error: any Error, decorator: any RequestDecorator) -> ServiceError {
        if error is CancellationError { return .cancelled() }
        if let error = error as? ServiceError, error.code == .cancelled { return error }
        return ServiceError(
            .decorationFailed, "\(type(of: decorator)) refused the request: \(error)", underlying: error)
    }
}
