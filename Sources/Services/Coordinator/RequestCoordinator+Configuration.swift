public import FoundationEssentials
public import HTTPTypes
public import Metrics
public import Tracing

extension RequestCoordinator {
    /// What a coordinator does for every load.
    public struct Configuration: Sendable {
        /// Decorators run on every request, before the resource's own, in order.
        public var decorators: [any RequestDecorator] = []
        /// The retry policy of resources that do not name one.
        public var retryPolicy: RetryPolicy = .default
        /// Whether identical loads in flight share one transfer (resources refine this with
        /// ``Resource/coalescing``). `false` makes every load its own transfer.
        public var coalescesDuplicateLoads = true
        /// Header fields left out of the coalescing identity because they differ per request
        /// without changing the response (tracing and request ids). Credentials never are.
        public var headersIgnoredForCoalescing: [HTTPField.Name] = [
            HTTPField.Name("traceparent")!, HTTPField.Name("tracestate")!, HTTPField.Name("X-Request-ID")!,
        ]
        /// Loads of one host (scheme and authority) that go to the network at once, at most;
        /// later ones wait for their turn, in order, before they start. 0 is no limit; 256 by
        /// default, above what the transport runs at once for one host (`CurlTransport`'s
        /// 64 connections), so that the limit costs no throughput.
        ///
        /// Why: a load waiting in the transport's own queue holds every frame of its way
        /// down, about 17 KB of task memory; one waiting here holds its first one only. With
        /// 10,000 loads at once, this is what keeps the process's memory near its size at 64.
        /// Never waiting: loads that read the cache or have a responder, and loads that would
        /// join an identical transfer in flight (known before the load starts only without
        /// decorators). A waiting load fails with `cancelled` when its task is, with
        /// `timedOut` once its total timeout (`TransferOptions.timeout`, counted from when
        /// the load began) runs out, and with `shutDown` when the coordinator shuts down.
        public var maximumLoadsPerHost = 256
        /// The longest a load may take, every attempt, retry pause and wait for its turn
        /// included: past it the load ends with `timedOut`. 60 seconds by default, so that an
        /// upstream that stalls ends a load within a minute (each attempt's idle limit,
        /// `TransferOptions.idleTimeout`, would otherwise let three attempts take three).
        /// A ``Deadline`` that comes sooner wins. Downloads, uploads, streamed loads and loads
        /// whose body is read from a file or a stream have none (their size sets their length);
        /// a ``Deadline`` still bounds them. `nil` removes the budget.
        public var loadBudget: Duration? = .seconds(60)
        /// How many retries may add to the loads sent to one host (``RetryBudget``): by
        /// default 20% of the last 10 seconds' loads plus 1 per second, so that an upstream
        /// that fails everything gets about 1.2 requests per load rather than the retry
        /// policy's 3. A retry past it is not made: the load ends with the failure that asked
        /// for it, and a `retryRefused` event says why. `nil` lets the retry policy alone decide.
        public var retryBudget: RetryBudget? = .default
        /// When to stop sending to a host that keeps failing (``CircuitBreaker``): by default
        /// after 10 failed attempts in a row (no connection, a timeout, a dropped connection, a
        /// 502, 503 or 504), or half of 20 or more in 10 seconds; loads then fail at once with
        /// `circuitOpen` until a probe, 5 seconds later, finds the host well. On by default: a
        /// host that is down would otherwise cost every load its connect timeout and its
        /// retries, and get every load's attempts when it comes back. Loads answered by a
        /// ``responder`` never touch a circuit. `nil` turns circuits off.
        public var circuitBreaker: CircuitBreaker? = .default
        /// A limit on each host's loads at once that follows what the host can take
        /// (``AdaptiveConcurrency``, AIMD): it grows while attempts come back well and shrinks
        /// when they fail as an overloaded host does or slow down, within
        /// ``maximumLoadsPerHost`` (which must not be 0). `nil`, the default, keeps the fixed
        /// limit.
        public var adaptiveConcurrency: AdaptiveConcurrency?
        /// Whether a slow first attempt of an idempotent load gets a second, hedged one, the
        /// first answer winning (``Hedging``): after the host's p95, at most 5% extra requests,
        /// with ``Hedging/default``. Resources refine it (``Resource/hedging``). `nil`, the
        /// default, hedges none.
        public var hedging: Hedging?
        /// The header field that tells the server how long the caller will wait: when set,
        /// each attempt of a load with a deadline (a ``Deadline`` or the ``loadBudget``) carries
        /// the whole milliseconds left until it, so that the next hop can give up on work nobody
        /// will wait for and pass the rest on. `nil`, the default, sends none. The field is added
        /// after the coalescing key and the cache key are taken: loads with different deadlines
        /// still share a transfer and an entry.
        ///
        /// ```swift
        /// configuration.deadlineField = HTTPField.Name("X-Deadline-Ms")!
        /// ```
        public var deadlineField: HTTPField.Name?
        /// The cache resources' `CachePolicy` uses (default: 32 MiB in memory, no disk tier).
        /// `nil` turns caching off: every policy then behaves as `CachePolicy.networkOnly`,
        /// and `CachePolicy.cacheOnly(tiers:)` fails with `cacheMiss`.
        public var cache: TieredCache? = TieredCache()
        /// Header fields whose values partition the cache: their SHA-256 is part of every cache
        /// key, so two users (or tenants) never share an entry. Decorators' fields count.
        public var credentialHeaders: [HTTPField.Name] = [
            .authorization, .proxyAuthorization, .cookie, HTTPField.Name("X-API-Key")!,
        ]
        /// Answers every resource load in place of the transport when set: mock mode
        /// (`CourierTesting`'s `Fixtures` serves each resource from its `.mock` file).
        /// Decorators, retries, validation, decoding and the cache still run. `send(_:)` is
        /// not a resource load and still uses the transport.
        public var responder: (any ResourceResponder)?
        /// The environment ``Backend`` endpoints resolve in (default `.production`).
        public var environment: BackendEnvironment = .production
        /// Per-backend environments (by ``Backend/id``), overriding ``environment``.
        public var environments: [String: BackendEnvironment] = [:]
        /// Options for every transfer (a resource's ``Resource/timeout`` overrides `timeout`).
        public var transferOptions = TransferOptions()
        /// Measures retry delays and sleeps them; tests inject a manual clock.
        public var clock: any Clock<Duration> = ContinuousClock()
        /// The wall clock: `Retry-After` dates and cache freshness are measured on it.
        public var now: @Sendable () -> Date = { Date() }
        /// Events buffered per subscriber before the oldest are dropped.
        public var eventBufferSize = 1024
        /// The tracer that gets one client span per load and propagates its context in the
        /// request's headers (`traceparent`). `nil`, the default, uses
        /// `InstrumentationSystem.tracer`: a no-op, which costs nothing, unless bootstrapped.
        public var tracer: (any Tracer)?
        /// The factory `courier.*` metrics are recorded with. `nil`, the default, uses
        /// `MetricsSystem.factory`: a no-op, which records nothing, unless bootstrapped.
        public var metricsFactory: (any MetricsFactory)?
        /// How often the pool gauges are recorded through ``metricsFactory``; `nil`, the
        /// default, records none. Each time, the coordinator reads its transport's pool (when it
        /// is a `CurlTransport`: `CurlTransport.poolSnapshot()`) and its own lines per host
        /// (``RequestCoordinator/loadsWaitingByHost``), and records:
        /// - `courier.pool.connections`: open connections, by `origin`, `state` (`in_use` or
        ///   `idle`) and `loop`;
        /// - `courier.pool.connecting`: connections being set up, by `loop`;
        /// - `courier.pool.transfers`: transfers, by `state` (`running`, or `waiting` for a
        ///   connection) and `loop`;
        /// - `courier.host.loads_waiting`: loads waiting for their turn at a host
        ///   (``maximumLoadsPerHost``), by `host`.
        ///
        /// A series that goes away (an origin whose connections all closed) is recorded as 0
        /// once, and every series is set to 0 when the coordinator shuts down; a metrics
        /// backend keeps a series it was given, so a process that calls many origins over its
        /// life exports one series per origin. Reading the pool costs each loop a moment between
        /// two rounds of its network work, nothing per request: every 10 s is plenty for a
        /// dashboard. Intervals under 10 ms count as 10 ms.
        public var poolGaugeInterval: Duration?

        /// The default configuration.
        public init() {}
    }
}
