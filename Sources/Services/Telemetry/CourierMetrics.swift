internal import CourierCore
internal import Metrics

/// The coordinator's `courier.*` metrics, recorded through one factory.
///
/// - `courier.requests` (counter): loads, by `method`, `status_class` (`2xx` to `5xx`, or
///   `none` when no response came) and `error` (a `ServiceError` code, or `none`).
/// - `courier.request.duration` (timer): each load's duration, by `method`.
/// - `courier.retries` (counter): attempts resent, by `method`.
/// - `courier.retries.refused` (counter): attempts the retry policy would have resent but
///   the host's retry budget or the load's deadline did not, by `method` and `reason`
///   (`budget`, `deadline`, `circuit`, `paused`).
/// - `courier.circuit.transitions` (counter): hosts' circuits that opened or closed
///   (``CircuitBreaker``), by `state` (`open` or `closed`); loads refused by an open circuit
///   show in `courier.requests` with `error` `circuitOpen`.
/// - `courier.host.limit` (gauge): a host's adaptive limit (``AdaptiveConcurrency``) each time
///   it moves, by `host` (`scheme://authority`).
/// - `courier.deadline.exceeded` (counter): loads that ended with `timedOut` at their deadline,
///   by `method` and `source` (`deadline`: a ``Deadline`` scope; `budget`: the load budget).
/// - `courier.hedges` (counter): hedges (``Hedging``), by `outcome` (`sent`, `won`, or
///   `refused` with a `reason`: `share`, `budget`, `circuit` or `paused`).
/// - `courier.host.pauses` (counter): hosts paused for a fleet by a `429` or `503` with
///   `Retry-After` (`HostPausing`); loads refused by a pause show in `courier.requests` with
///   `error` `hostPaused`.
/// - `courier.coalesced` (counter): loads that joined a transfer in flight, by `method`.
/// - `courier.cache.lookups` (counter): loads that consulted the cache, by `result` (`hit` or
///   `miss`) and `source` (`memory`, `disk`, `shared`, `revalidated`, or `network` on a miss).
/// - `courier.cache.fleet` (counter): fleet-wide collapsing decisions, by `outcome`
///   (`leaseTaken`, `leaseWaited`, `leaseWaitTimedOut`, `leaseReleasedUnstored`, `storeFailed`).
/// - `courier.cache.store_failures` (counter): calls to a cache store that failed (the load
///   carried on), by `tier` (`disk`, `shared`): a database that is down shows here.
struct CourierMetrics: Sendable {
    static let requests = "courier.requests"
    static let duration = "courier.request.duration"
    static let retries = "courier.retries"
    static let retriesRefused = "courier.retries.refused"
    static let circuitTransitions = "courier.circuit.transitions"
    static let hostLimit = "courier.host.limit"
    static let hedges = "courier.hedges"
    static let deadlinesExceeded = "courier.deadline.exceeded"
    static let hostPauses = "courier.host.pauses"
    static let coalesced = "courier.coalesced"
    static let cacheLookups = "courier.cache.lookups"
    static let fleet = "courier.cache.fleet"
    static let storeFailures = "courier.cache.store_failures"

    /// Counts `event` when it is a store failure, through `configured` (nil: the global
    /// factory); nothing with the no-op factory.
    static func countStoreFailure(_ event: CacheEvent, configured: (any MetricsFactory)?) {
        guard event.name == .storeFailed, let tier = event.tier else { return }
        let factory = configured ?? MetricsSystem.factory
        guard !(factory is NOOPMetricsHandler) else { return }
        Counter(label: storeFailures, dimensions: [("tier", tier.description)], factory: factory).increment()
    }

    let factory: any MetricsFactory

    /// Records one load's outcome.
    func load(
        method: String, status: Int?, error: ServiceError.Code?, duration: Swift.Duration, coalesced: Bool,
        cacheSource: ResponseSource?, cacheMissed: Bool = false
    ) {
        let statusClass = status.map { "\($0 / 100)xx" } ?? "none"
        Counter(
            label: Self.requests,
            dimensions: [("method", method), ("status_class", statusClass), ("error", error?.description ?? "none")],
            factory: factory
        ).increment()
        Metrics.Timer(label: Self.duration, dimensions: [("method", method)], factory: factory)
            .record(duration: duration)
        if coalesced { Counter(label: Self.coalesced, dimensions: [("method", method)], factory: factory).increment() }
        if let cacheSource {
            let result = cacheSource.isCache ? "hit" : "miss"
            Counter(
                label: Self.cacheLookups, dimensions: [("result", result), ("source", "\(cacheSource)")],
                factory: factory
            ).increment()
        } else if cacheMissed {
            Counter(label: Self.cacheLookups, dimensions: [("result", "miss"), ("source", "none")], factory: factory)
                .increment()
        }
    }

    /// Records one fleet-wide collapsing decision.
    func fleetCollapsing(outcome: String) {
        Counter(label: Self.fleet, dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// Records one attempt not resent, for `reason`.
    func retryRefused(method: String, reason: String) {
        Counter(label: Self.retriesRefused, dimensions: [("method", method), ("reason", reason)], factory: factory)
            .increment()
    }

    /// Records a circuit that opened or closed.
    func circuit(state: String) {
        Counter(label: Self.circuitTransitions, dimensions: [("state", state)], factory: factory).increment()
    }

    /// Records a load its deadline ended, set by `source` (`deadline`: a ``Deadline``; `budget`:
    /// the coordinator's load budget).
    func deadlineExceeded(method: String, source: String) {
        Counter(label: Self.deadlinesExceeded, dimensions: [("method", method), ("source", source)], factory: factory)
            .increment()
    }

    /// Records a hedge sent, won, or refused for `reason`.
    func hedge(outcome: String, reason: String? = nil) {
        var dimensions = [("outcome", outcome)]
        if let reason { dimensions.append(("reason", reason)) }
        Counter(label: Self.hedges, dimensions: dimensions, factory: factory).increment()
    }

    /// Records a host paused by its `Retry-After`.
    func hostPaused() {
        Counter(label: Self.hostPauses, factory: factory).increment()
    }

    /// Records `host`'s adaptive limit.
    func hostLimit(_ limit: Int, host: String) {
        Gauge(label: Self.hostLimit, dimensions: [("host", host)], factory: factory).record(limit)
    }

    /// Records one resent attempt.
    func retried(method: String) {
        Counter(label: Self.retries, dimensions: [("method", method)], factory: factory).increment()
    }
}
