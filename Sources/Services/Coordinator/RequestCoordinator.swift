internal import FoundationEssentials
public import HTTPTypes
public import Logging

/// Runs loads: decorates requests, coalesces identical ones in flight, retries, validates,
/// decodes, and reports events.
///
/// Why an actor: its isolation protects the coordinator's lifecycle, and only that: whether it
/// is shut down, the background work (revalidations, streamed bodies still open) that
/// ``shutdown(cancellingInFlight:)`` waits for, and the tasks waiting for that drain. They change together, and a
/// shutdown must see them together. The state of each load lives outside it, each part a pure
/// state machine under its own lock: coalescing (`FlightTable`), the turns per host
/// (`HostQueue`), the fleet gate (`FleetGate`), the event subscribers (`EventHub`). So a plain
/// `load()` never hops onto the actor (its members are `nonisolated`): decorating, transfers,
/// decoding and waiting happen in the caller's task or in the one task that drives a transfer,
/// and loads of one coordinator do not queue behind each other for its isolation.
///
/// `RequestCoordinator.current` is a task-local: give a task tree its own coordinator with
/// `RequestCoordinator.$current.withValue(coordinator) { ... }`; outside any scope it is
/// ``shared``, which sends with a process-wide `CurlTransport`.
public actor RequestCoordinator {
    /// The transport every transfer goes through.
    nonisolated let transport: any HTTPTransport
    /// What this coordinator does for every load.
    public nonisolated let configuration: Configuration
    nonisolated let backgroundLogger: Logger?
    nonisolated let events = EventHub()
    /// Transfers in flight and their waiters, kept off the actor.
    nonisolated let flights = FlightTable()
    /// Whether the transport can cancel a transfer from outside its task, so that a load leads
    /// its transfer on its own task (see ``FlightTable``).
    nonisolated let transportHonoursCancellation: Bool
    /// Loads going to the network, per host, and those waiting for their turn (nil: no limit).
    nonisolated let hostQueue: HostQueue?
    /// One fleet lease per key at a time (fleet-wide collapsing).
    nonisolated let fleetGate = FleetGate()
    /// The keys a background refresh (`stale-while-revalidate`) runs for: one at a time per key.
    nonisolated let refreshing = LockedValue<Set<CacheKey>>([])
    /// Each host's retry budget, circuit, adaptive limit, hedging state and pause.
    nonisolated let hostPolicies: HostPolicies
    /// The cache's store that shares host pauses with a fleet, if any (``HostPausing``).
    nonisolated let hostPausingStore: (any HostPausing)?
    /// Reads the fleet's host pauses until shutdown.
    private nonisolated let hostPauseFollower: Task<Void, Never>?
    /// Pauses being written to the fleet's store, which shutdown waits for.
    nonisolated let hostPauseWrites = PendingWrites()
    private nonisolated let cacheObserver: UInt64?
    /// Records the pool gauges (``Configuration/poolGaugeInterval``) until shutdown.
    private nonisolated let poolGauges: Task<Void, Never>?

    var isShutDown = false
    /// Background work that ``shutdown(cancellingInFlight:)`` waits for: revalidations whose task has not ended,
    /// and streamed bodies still open.
    var backgroundWork = 0
    var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Streamed bodies still being read (``stream(_:logger:)``), by load id: how to stop each.
    /// Weak: a body nobody holds any more ends by itself.
    var openStreams: [UInt64: @Sendable () -> Void] = [:]
    /// The open streams that never end by themselves (event streams): any shutdown ends them.
    var endlessStreams: Set<UInt64> = []

    /// Creates a coordinator over `transport`. Give it a `Logger` to log each load at debug
    /// level (failures too: the caller gets them as errors) with `courier.request.id` metadata;
    /// without one it is silent. Work that outlives a load (a background refresh) logs here.
    public init(
        transport: any HTTPTransport, configuration: Configuration = Configuration(), backgroundLogger: Logger? = nil
    ) {
        self.transport = transport
        transportHonoursCancellation = transport is any HonoursTransferCancellation
        self.configuration = configuration
        let ceiling = configuration.maximumLoadsPerHost
        hostQueue =
            ceiling > 0
            ? HostQueue(
                limit: ceiling,
                initialLineLimit: configuration.adaptiveConcurrency.map {
                    AdaptiveLimitMachine($0, ceiling: ceiling).initialLimit
                }) : nil
        let pausing = Self.hostPausingStore(in: configuration.cache)
        hostPausingStore = pausing
        let policies = HostPolicies(
            budget: configuration.retryBudget, breaker: configuration.circuitBreaker,
            adaptive: configuration.adaptiveConcurrency, ceiling: ceiling, pauses: pausing != nil,
            clock: configuration.clock)
        hostPolicies = policies
        // The fleet's pauses are times on the real clock: a coordinator on a test clock keeps
        // only its own.
        hostPauseFollower =
            configuration.clock is ContinuousClock
            ? pausing.map { Self.followHostPauses(in: $0, into: policies, logger: backgroundLogger) } : nil
        self.backgroundLogger = backgroundLogger
        let events = self.events
        let metricsFactory = configuration.metricsFactory
        cacheObserver = configuration.cache?.observers.add { event in
            events.emit(0, .cache(event))
            CourierMetrics.countStoreFailure(event, configured: metricsFactory)
        }
        poolGauges = configuration.poolGaugeInterval.map { [hostQueue] interval in
            PoolGauges.start(
                every: interval, transport: transport as? CurlTransport, hostQueue: hostQueue, factory: metricsFactory)
        }
    }

    deinit {
        if let cacheObserver { configuration.cache?.observers.remove(cacheObserver) }
        poolGauges?.cancel()
        hostPauseFollower?.cancel()
    }

    /// Loads waiting for their turn (``Configuration/maximumLoadsPerHost``) right now, by
    /// `scheme://authority`; a host whose loads all have their place shows 0 while it has a line.
    public nonisolated var loadsWaitingByHost: [String: Int] { hostQueue?.waitingByHost ?? [:] }

    /// The process default: a coordinator over a shared `CurlTransport`, created on first use.
    public static let shared = RequestCoordinator(transport: CurlTransport())

    /// The coordinator `load()` uses when none is named.
    @TaskLocal public static var current: RequestCoordinator = .shared

    /// A stream of this coordinator's events from now on. Each subscriber has its own buffer of
    /// `Configuration.eventBufferSize` events; when it lags, the oldest are dropped.
    public nonisolated func events(bufferingNewest limit: Int? = nil) -> AsyncStream<CoordinatorEvent> {
        events.subscribe(bufferingNewest: limit ?? configuration.eventBufferSize)
    }

    /// Loads `resource` and returns the value with its response head, metrics and source.
    /// Throws `ServiceError` only.
    @concurrent public nonisolated func load<R: Resource>(
        _ resource: R, logger: Logger? = nil
    ) async throws(ServiceError) -> Loaded<R.Response> {
        let (host, plan) = try await takeTurn(LoadPlan(resource: resource, coordinator: self, logger: logger))
        defer { leaveTurn(host) }
        return try await run(plan) { [plan] execution in
            try await Self.finish(resource, plan: plan, execution: execution)
        }
    }

    /// Loads `resource` as ``Resource/updates(using:refresh:logger:)`` does: the stored value
    /// goes to `yield` first, then the network's value is returned (or the stored one, when
    /// `refresh` skips the network while it is fresh).
    @concurrent nonisolated func loadUpdates<R: Resource>(
        _ resource: R, refresh: UpdatesRefresh = .always, logger: Logger?,
        yield: @escaping @Sendable (Loaded<R.Response>) async -> Void
    ) async throws -> Loaded<R.Response> {
        let plan = LoadPlan(resource: resource, coordinator: self, logger: logger)
        return try await run(plan, intent: .updates(yield: yield, whenStale: refresh.skipsFreshValues)) {
            [plan] execution in
            try await Self.finish(resource, plan: plan, execution: execution)
        }
    }

    /// Validates and decodes what a transfer or the cache produced.
    nonisolated(nonsending) static func finish<R: Resource>(
        _ resource: R, plan: LoadPlan, execution: Execution
    ) async throws -> Loaded<R.Response> {
        let response = execution.response
        let (backend, id) = (plan.backend, plan.id)
        try checkStatus(of: response, for: resource, backend: backend)
        do {
            try backend?.validate(response.head, body: response.body)
            try resource.validate(response.head, body: response.body)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(
                .validationFailed, "The resource rejected the response: \(error)", response: response.head,
                bodyExcerpt: ServiceError.excerpt(of: response), underlying: error)
        }
        let value = try await decode(resource, execution: execution)
        return Loaded(
            value: value, response: response.head, metrics: response.metrics, source: execution.source,
            isStale: execution.isStale, networkError: execution.networkError, wasCoalesced: execution.wasCoalesced,
            requestID: id, age: execution.age, storedAt: execution.storedAt)
    }

    /// Throws `unacceptableStatus` (with the backend's message, when it finds one) unless the
    /// resource accepts the response's status.
    nonisolated static func checkStatus<R: Resource>(
        of response: TransportResponse, for resource: R, backend: (any Backend)?
    ) throws {
        guard !resource.acceptableStatus.contains(response.head.status.code) else { return }
        var error = ServiceError.unacceptable(response, expected: resource.acceptableStatus)
        if let message = backend?.errorMessage(for: response.head, body: response.body) {
            error = ServiceError(
                .unacceptableStatus, "HTTP \(response.head.status.code): \(message)", response: response.head,
                bodyExcerpt: error.bodyExcerpt)
        }
        throw error
    }

    /// Sends a one-off request through this coordinator's decorators, retries and events,
    /// without declaring a resource. Any status is returned; only transfers that fail throw.
    @concurrent public nonisolated func send(
        _ request: HTTPRequest, body: RequestBody? = nil, logger: Logger? = nil
    ) async throws(ServiceError) -> TransportResponse {
        let (host, plan) = try await takeTurn(LoadPlan(request: request, body: body, coordinator: self, logger: logger))
        defer { leaveTurn(host) }
        return try await run(plan) { $0.response }
    }

    /// Stops taking loads (later ones fail with `shutDown`), then waits for those in flight
    /// to finish, or cancels them when `cancellingInFlight` is true. Open event streams
    /// (``events(_:reconnection:logger:)``), which never end by themselves, end with `shutDown`
    /// either way. Does not shut the transport down: its owner does.
    public func shutdown(cancellingInFlight: Bool = false) async {
        isShutDown = true
        if let poolGauges {
            poolGauges.cancel()
            await poolGauges.value
        }
        flights.shutDown(cancelling: cancellingInFlight)
        hostQueue?.shutDown()
        cancelStreams(endlessOnly: !cancellingInFlight)
        if backgroundWork > 0 {
            await withCheckedContinuation { drainWaiters.append($0) }
        }
        await flights.drained()
        await hostPauseWrites.drained()
        if let hostPauseFollower {
            hostPauseFollower.cancel()
            await hostPauseFollower.value
        }
        events.finishAll()
    }

    /// Decodes once per resource type for all waiters of a shared transfer, when allowed.
    nonisolated(nonsending) static func decode<R: Resource>(_ resource: R, execution: Execution) async throws
        -> R.Response
    {
        guard let shared = execution.sharedDecodes, resource.sharesDecodedResponse else {
            return try decodeOnce(resource, response: execution.response)  // no closure to allocate
        }
        let response = execution.response
        return try await shared.value(for: R.self) { try decodeOnce(resource, response: response) }
    }

    /// Decodes `response` for `resource`; a failure is `decodingFailed`, or `nil` when the
    /// resource says so.
    nonisolated static func decodeOnce<R: Resource>(_ resource: R, response: TransportResponse) throws -> R.Response {
        do {
            return try resource.decode(response.body, response: response.head)
        } catch let error where error is DecodingError && resource.returnsNilWhenDecodingFails {
            guard let none = (R.Response.self as? any OptionalResponse.Type)?.nothing as? R.Response else {
                throw JSONDecoding.failure(error, response: response)
            }
            return none
        } catch {
            throw JSONDecoding.failure(error, response: response)
        }
    }
}

/// Optional response types, so a failed decode can become `nil`.
protocol OptionalResponse {
    static var nothing: Self { get }
}

extension Optional: OptionalResponse {
    static var nothing: Self { nil }
}
