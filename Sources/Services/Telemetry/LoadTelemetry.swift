internal import CourierCore
internal import HTTPTypes
internal import Metrics
internal import Tracing

/// One load's client span and metrics (OpenTelemetry's HTTP client conventions).
///
/// ``start(_:configuration:background:)`` returns `nil` when both the tracer and the metrics
/// factory are no-ops, so an uninstrumented load builds no attribute and records nothing.
final class LoadTelemetry: Sendable {
    /// The telemetry of the load whose transfer runs in this task: a shared transfer's task
    /// inherits its first load's, which is the one whose span it carries and whose retries it counts.
    @TaskLocal static var current: LoadTelemetry?

    let tracer: any Tracer
    /// The load's span; `nil` when only metrics are recorded.
    let span: (any Span)?
    let metrics: CourierMetrics?
    let method: String
    /// Whether the load consults the cache (so its source counts as a lookup).
    let usesCache: Bool
    /// Attributes retry spans repeat from the load's span.
    let server: (address: String, port: Int?)
    let url: String
    /// When the load must end, and whether a ``Deadline`` (rather than the load budget) set it.
    let deadline: (at: Moment, isTasks: Bool)?
    private let resends = LockedValue(0)

    private init(
        tracer: any Tracer, span: (any Span)?, metrics: CourierMetrics?, plan: LoadPlan, usesCache: Bool
    ) {
        self.tracer = tracer
        self.span = span
        self.metrics = metrics
        method = plan.request.method.rawValue
        self.usesCache = usesCache
        server = Self.server(of: plan.request)
        url = plan.loggableURL
        deadline = plan.deadline.map { ($0, $0 == plan.taskDeadline) }
    }

    /// Starts the load's span (a child of the task's current context, if any), or returns `nil`
    /// when there is nothing to record.
    static func start(
        _ plan: LoadPlan, configuration: RequestCoordinator.Configuration, background: Bool
    ) -> LoadTelemetry? {
        let tracer = configuration.tracer ?? Self.systemTracer()
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        // Compared by type, not cast: none of the no-op types can be subclassed (two structs,
        // one final class), and a dynamic cast of an existential costs more per load than the
        // rest of this function.
        let traces = ObjectIdentifier(type(of: tracer)) != ObjectIdentifier(NoOpTracer.self)
        let metrics =
            ObjectIdentifier(type(of: factory)) == ObjectIdentifier(NOOPMetricsHandler.self)
            ? nil : CourierMetrics(factory: factory)
        guard traces || metrics != nil else { return nil }
        let usesCache = configuration.cache != nil && plan.cachePolicy.usesCache && plan.request.method == .get
        guard traces else {
            return LoadTelemetry(tracer: tracer, span: nil, metrics: metrics, plan: plan, usesCache: usesCache)
        }
        let span = tracer.startSpan(
            plan.request.method.rawValue, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        let telemetry = LoadTelemetry(tracer: tracer, span: span, metrics: metrics, plan: plan, usesCache: usesCache)
        telemetry.describe(span)
        if background { span.attributes["courier.background"] = true }
        if let operation = plan.operation { span.attributes["courier.operation"] = operation }
        if let deadline = telemetry.deadline {
            let left = (deadline.at - Moment.now).components
            span.attributes["courier.deadline.ms"] = max(
                left.seconds * 1_000 + left.attoseconds / 1_000_000_000_000_000, 0)
        }
        return telemetry
    }

    /// `InstrumentationSystem.tracer`, without its search for a `Tracer` conformance when the
    /// instrument in scope (the task's, else the bootstrapped one) is a no-op, as it is unless
    /// the process bootstrapped one.
    private static func systemTracer() -> any Tracer {
        let instrument = type(of: InstrumentationSystem.instrument)
        if ObjectIdentifier(instrument) == ObjectIdentifier(NoOpInstrument.self)
            || ObjectIdentifier(instrument) == ObjectIdentifier(NoOpTracer.self)
        {
            return NoOpTracer()
        }
        return InstrumentationSystem.tracer
    }

    /// Runs `body` with this telemetry, and its span's context, bound to the task.
    nonisolated(nonsending) static func run<T>(
        _ telemetry: LoadTelemetry, _ body: nonisolated(nonsending) () async throws -> T
    ) async throws -> T {
        try await $current.withValue(telemetry) {
            guard let span = telemetry.span else { return try await body() }
            return try await ServiceContext.$current.withValue(span.context) { try await body() }
        }
    }

    /// Ends the span of a load that produced a value and records its metrics.
    func finished(_ execution: Execution, duration: Duration) {
        let status = execution.response.head.status.code
        if let span {
            span.attributes["http.response.status_code"] = status
            span.attributes["courier.cache.source"] = "\(execution.source)"
            span.attributes["courier.coalesced"] = execution.wasCoalesced
            recordResends(on: span)
            if status >= 400 {  // a status the resource accepts is still an error for a client span
                span.attributes["error.type"] = String(status)
                span.setStatus(SpanStatus(code: .error))
            }
            span.end()
        }
        metrics?.load(
            method: method, status: status, error: nil, duration: duration, coalesced: execution.wasCoalesced,
            cacheSource: usesCache ? execution.source : nil)
    }

    /// Ends the span of a load that failed with `error` and records its metrics.
    func failed(_ error: ServiceError, status: Int?, duration: Duration) {
        // Ended by its deadline: a timeout at (or within 20 ms of, as curl counts) the instant.
        let exceeded =
            deadline.flatMap { deadline in
                error.code == .timedOut && Moment.now + .milliseconds(20) >= deadline.at
                    ? (deadline.isTasks ? "deadline" : "budget") : nil
            }
        if let exceeded {
            span?.attributes["courier.deadline.exceeded"] = exceeded
            metrics?.deadlineExceeded(method: method, source: exceeded)
        }
        if let span {
            if let status { span.attributes["http.response.status_code"] = status }
            span.attributes["error.type"] = error.code.description
            recordResends(on: span)
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.code.description))
            span.end()
        }
        metrics?.load(
            method: method, status: status, error: error.code, duration: duration, coalesced: false,
            cacheSource: nil, cacheMissed: usesCache && error.code == .cacheMiss)
    }

    /// Counts a retry: attempt `attempt` (2 or more) is about to be sent.
    func resending(attempt: Int) {
        resends.withLock { $0 = max($0, attempt - 1) }
        metrics?.retried(method: method)
    }

    /// Records what fleet-wide collapsing did for this load (`leaseTaken`, `leaseWaited`,
    /// `leaseWaitTimedOut`, `leaseReleasedUnstored`, `storeFailed`).
    func fleetCollapsing(_ outcome: String) {
        span?.attributes["courier.cache.fleet"] = outcome
        metrics?.fleetCollapsing(outcome: outcome)
    }

    private func recordResends(on span: any Span) {
        let count = resends.withLock { $0 }
        if count > 0 { span.attributes["http.request.resend_count"] = count }
    }

    /// The request attributes every span of this load carries.
    func describe(_ span: any Span) {
        span.attributes["http.request.method"] = method
        span.attributes["url.full"] = url
        span.attributes["server.address"] = server.address
        if let port = server.port { span.attributes["server.port"] = port }
    }

    /// The host and port of `request`'s authority; the port defaults to the scheme's.
    static func server(of request: HTTPRequest) -> (address: String, port: Int?) {
        var authority = Substring(request.authority ?? "")
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        var port: Int?
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { port = Int(rest.dropFirst()) }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            port = Int(authority[authority.index(after: colon)...])
        }
        switch request.scheme?.lowercased() {
        case "https": return (String(host), port ?? 443)
        case "http": return (String(host), port ?? 80)
        default: return (String(host), port)
        }
    }
}

extension CacheIntent {
    /// Whether this is a background refresh, which no caller waits for.
    var isRefresh: Bool {
        if case .refresh = self { return true }
        return false
    }
}
