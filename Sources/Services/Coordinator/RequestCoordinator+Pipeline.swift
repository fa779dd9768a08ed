internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

extension RequestCoordinator {
    /// Runs one load: events and logs around the cache, decoration, transfer and `finish`.
    ///
    /// Every local of an async function that lives across an `await` sits in the task's frame
    /// for the whole transfer, so the reporting before and after is done in synchronous helpers.
    nonisolated(nonsending) func run<T: Sendable>(
        _ plan: LoadPlan, intent: CacheIntent<T> = .load,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws(ServiceError) -> T {
        if plan.operation != nil { events.setOperation(plan.operation, for: plan.id) }
        defer { if plan.operation != nil { events.setOperation(nil, for: plan.id) } }
        let telemetry = started(plan, background: intent.isRefresh)
        do {
            if let error = plan.buildError { throw error }
            // Without telemetry, no task-local to bind: one async level (and its frame) fewer.
            let (value, execution) =
                if let telemetry {
                    try await LoadTelemetry.run(telemetry) { try await deliver(plan, intent: intent, finish: finish) }
                } else {
                    try await deliver(plan, intent: intent, finish: finish)
                }
            finished(plan, execution: execution, telemetry: telemetry)
            return value
        } catch {
            throw failed(plan, error: error, telemetry: telemetry)
        }
    }

    // What a load reports when it starts, lands and fails (events, debug logs, telemetry):
    // synchronous on purpose, so its temporaries sit on the thread's stack for a moment rather
    // than in the task's frame for the whole transfer.

    /// Reports a load that starts, and returns its telemetry (nil when nothing records).
    @inline(never)
    nonisolated func started(_ plan: LoadPlan, background: Bool) -> LoadTelemetry? {
        events.emit(plan.id, .started(method: plan.request.method, url: plan.loggableURL))
        plan.logger?.debug(
            "load started",
            metadata: ["courier.http.method": "\(plan.request.method)", "courier.url": "\(plan.loggableURL)"])
        return LoadTelemetry.start(plan, configuration: configuration, background: background)
    }

    /// Reports a load that produced a value from `execution`.
    @inline(never)
    nonisolated func finished(_ plan: LoadPlan, execution: Execution, telemetry: LoadTelemetry?) {
        telemetry?.finished(execution, duration: ContinuousClock.now - plan.started)
        // The clock is read only when someone listens.
        events.emit(
            plan.id,
            .finished(
                status: execution.response.head.status, metrics: execution.response.metrics,
                duration: ContinuousClock.now - plan.started))
        plan.logger?.debug(
            "load finished",
            metadata: [
                "courier.http.status": "\(execution.response.head.status.code)",
                "courier.duration": "\(ContinuousClock.now - plan.started)",
                "courier.coalesced": "\(execution.wasCoalesced)", "courier.source": "\(execution.source)",
            ])
    }

    /// Reports a load that failed with `error`, and returns it as a `ServiceError`.
    @inline(never)
    nonisolated func failed(_ plan: LoadPlan, error: any Error, telemetry: LoadTelemetry?) -> ServiceError {
        var error = ServiceError.wrapping(error)
        if error.curlCommand == nil, plan.buildError == nil {
            error.curlCommand = CurlCommand(plan.request, body: plan.body)
        }
        let duration = ContinuousClock.now - plan.started
        let status = error.status?.code
        telemetry?.failed(error, status: status, duration: duration)
        events.emit(plan.id, .failed(code: error.code, status: error.status, duration: duration))
        // Debug, not info: the caller gets the error; a 404 is not an incident.
        plan.logger?.debug(
            "load failed",
            metadata: ["courier.error.code": "\(error.code)", "courier.error.message": "\(error.message)"])
        return error
    }

    /// The value and what produced it: through the cache when the plan's policy uses it (or
    /// when an unsafe method must invalidate), else straight from the network.
    nonisolated(nonsending) func deliver<T: Sendable>(
        _ plan: LoadPlan, intent: CacheIntent<T>,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        if let cache = configuration.cache, plan.cachePolicy.usesCache || plan.request.method != .get {
            return try await runCached(plan, cache: cache, intent: intent, finish: finish)
        }
        if plan.cachePolicy.mode == .cacheOnly {
            throw ServiceError(.cacheMiss, "This coordinator has no cache, and the resource is cache-only.")
        }
        if plan.request.headerFields[.cacheControl] != nil,
            CacheControl(plan.request.headerFields).contains("only-if-cached")
        {
            throw ServiceError.onlyIfCachedMiss(
                "The request says only-if-cached, and its load does not read the cache.")
        }
        let execution = try await execute(plan)
        return (try await finish(execution), execution)
    }

    /// Runs the decorators, in order, on the plan's request.
    ///
    /// Loads the decorators start (a token refresh) never wait for a turn at their host
    /// (``HostQueue/isExempt``): this load may hold the place they would wait for.
    nonisolated(nonsending) func decorate(_ plan: LoadPlan) async throws -> HTTPRequest {
        var request = plan.request
        for decorator in plan.decorators {
            do {
                try await HostQueue.$isExempt.withValue(true) {
                    try await decorator.decorate(&request, body: plan.body)
                }
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
    @inline(__always)
    nonisolated(nonsending) func execute(
        _ plan: LoadPlan, decorated: HTTPRequest? = nil, extraFields: HTTPFields? = nil
    ) async throws -> Execution {
        // Without decorators, nothing can ask for a replay: a path whose frame is a fraction of
        // the decorated one's, held for the whole transfer.
        if plan.decorators.isEmpty {
            return try await executeUndecorated(plan, request: decorated ?? plan.request, extraFields: extraFields)
        }
        return try await executeDecorated(plan, decorated: decorated, extraFields: extraFields)
    }

    @inline(never)

    private nonisolated(nonsending) func executeUndecorated(
        _ plan: LoadPlan, request: HTTPRequest, extraFields: HTTPFields?
    ) async throws -> Execution {
        if Task.isCancelled { throw ServiceError.cancelled() }
        let request = try Self.prepared(request, extraFields: extraFields)
        var execution = try await transfer(request, plan: plan).get()
        execution.request = request
        return execution
    }

    /// `request` with `extraFields` set, checked.
    @inline(never)
    private static func prepared(_ request: HTTPRequest, extraFields: HTTPFields?) throws -> HTTPRequest {
        var request = request
        if let extraFields {
            for field in extraFields { request.headerFields[field.name] = field.value }
        }
        try RequestValidation.validate(request)
        return request
    }

    @inline(never)

    private nonisolated(nonsending) func executeDecorated(
        _ plan: LoadPlan, decorated: HTTPRequest?, extraFields: HTTPFields?
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
            request = try Self.prepared(request, extraFields: extraFields)

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
            if replayed { return try outcome.get() }
            let decoratedOutcome: DecoratedOutcome
            switch outcome {
            case .success(let execution): decoratedOutcome = .response(execution.response.head)
            case .failure(let error)
            where error.code == .cancelled || error.code == .redundantRequest
                || error.code == .shutDown:
                throw error
            case .failure(let error): decoratedOutcome = .failure(error)
            }
            var replay = false
            for decorator in plan.decorators {
                guard let decorator = decorator as? any ReplayingDecorator else { continue }
                do {
                    let inspected = try await HostQueue.$isExempt.withValue(true) {
                        try await decorator.inspect(decoratedOutcome, of: request)
                    }
                    if inspected == .replay { replay = true }
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
    nonisolated(nonsending) func transfer(_ request: HTTPRequest, plan: LoadPlan) async -> Result<
        Execution, ServiceError
    > {
        let (key, transfer) = flight(of: request, plan: plan)
        return await flights.run(
            id: plan.id, key: key, rejectsDuplicates: plan.coalescing == .rejectDuplicates,
            transportExecutor: transport.taskExecutor, reportsShutDown: plan.receiver != nil,
            cancellation: transfer.options.cancellation, deadline: plan.taskDeadline,
            joined: { [id = plan.id] in events.emit(id, .coalesced) },
            { await self.transferWithRetries(transfer) })
    }

    /// What identifies `request`'s transfer for coalescing, and what each attempt sends.
    /// Synchronous, so that building them leaves nothing in the frame `transfer` holds for the
    /// whole transfer.
    @inline(never)
    private nonisolated func flight(of request: HTTPRequest, plan: LoadPlan) -> (FlightKey?, PlannedTransfer) {
        let key = flightKey(of: request, plan: plan)
        // A load that would lead runs its transfer on its own task when shutdown can still end
        // it through the transport: not with a receiver or a responder, whose work it cannot.
        // Nor when a cancelled leader's successor would send a request the server may already
        // have acted on (a shared POST without an `Idempotency-Key`): it keeps one transfer.
        let cancellation =
            transportHonoursCancellation && plan.receiver == nil && plan.stub == nil
                && (key == nil || RetryPolicy.isIdempotent(request)) ? TransferCancellation() : nil
        return (
            key,
            PlannedTransfer(
                request, plan: plan, cancellation: cancellation, deadlineField: configuration.deadlineField)
        )
    }

    /// What identifies `request`'s transfer for coalescing; nil when the load never shares.
    nonisolated func flightKey(of request: HTTPRequest, plan: LoadPlan) -> FlightKey? {
        // A body streamed from files is never compared: no key, so the load never shares.
        plan.coalescing == .never
            ? nil
            : FlightKey(
                request, body: plan.body, ignoring: configuration.headersIgnoredForCoalescing, tag: plan.stub?.tag,
                partitions: plan.observers.isEmpty ? [] : plan.observers.compactMap(\.coalescingPartition))
    }

    static func decorationFailure(_ error: any Error, decorator: any RequestDecorator) -> ServiceError {
        if error is CancellationError { return .cancelled() }
        if let error = error as? ServiceError, error.code == .cancelled { return error }
        return ServiceError(
            .decorationFailed, "\(type(of: decorator)) refused the request: \(error)", underlying: error)
    }
}
