internal import CourierCore
public import HTTPTypes

extension CoordinatorEvent.Kind {
    /// Which kind of event happened, without its fields: a value to switch on (with a
    /// `default`) or use as a metric label. New names may be added.
    public struct Name: Sendable, Hashable, CustomStringConvertible {
        /// The name, as written in this type's static members.
        public let description: String

        private init(_ description: String) { self.description = description }

        /// A load started (`method`, `url`).
        public static let started = Name("started")
        /// Its decorators ran (`decoratorCount`).
        public static let decorated = Name("decorated")
        /// It joined an identical load in flight instead of sending its own request.
        public static let coalesced = Name("coalesced")
        /// An attempt failed and another follows (`attempt`, `delay`, `reason`).
        public static let retried = Name("retried")
        /// An attempt failed and the retry policy would repeat it, but the host's retry
        /// budget, the load's deadline, the host's open circuit or its pause refused
        /// (`attempt`, `reason`: `budget`, `deadline`, `circuit` or `paused`).
        public static let retryRefused = Name("retryRefused")
        /// A decorator asked for the load to be sent once more (a refreshed token).
        public static let replayed = Name("replayed")
        /// Its attempt opened its host's circuit (`host`, and `delay`: the cool-down before a
        /// probe). See ``CircuitBreaker``.
        public static let circuitOpened = Name("circuitOpened")
        /// Its probe closed its host's circuit (`host`).
        public static let circuitClosed = Name("circuitClosed")
        /// Its attempt moved its host's adaptive limit (`host`, `limit`). See
        /// ``AdaptiveConcurrency``.
        public static let limitChanged = Name("limitChanged")
        /// Its first attempt was still out after the hedge's delay, and a hedge went (`host`,
        /// `delay`). See ``Hedging``.
        public static let hedged = Name("hedged")
        /// Its attempt got a `429` or `503` with `Retry-After`, and a cache store that shares
        /// host pauses with a fleet is configured: the host is paused for the whole fleet
        /// (`host`, `delay`). See `HostPausing`.
        public static let hostPaused = Name("hostPaused")
        /// It ended with a response (`status`, `metrics`, `duration`).
        public static let finished = Name("finished")
        /// It failed (`errorCode`, `status` when there was one, `duration`).
        public static let failed = Name("failed")
        /// The cache did something for it (`cacheEvent`).
        public static let cache = Name("cache")
    }

    /// The method (`started`).
    public var method: HTTPRequest.Method? {
        if case .started(let method, _) = base { return method }
        return nil
    }

    /// The URL without its query (`started`).
    public var url: String? {
        if case .started(_, let url) = base { return url }
        return nil
    }

    /// How many decorators ran (`decorated`).
    public var decoratorCount: Int? {
        if case .decorated(let count) = base { return count }
        return nil
    }

    /// The attempt that failed (`retried`, `retryRefused`).
    public var attempt: Int? {
        switch base {
        case .retried(let attempt, _, _), .retryRefused(let attempt, _): attempt
        default: nil
        }
    }

    /// The wait before the next attempt (`retried`); the cool-down before the circuit lets a
    /// probe through (`circuitOpened`); the wait before the hedge (`hedged`).
    public var delay: Duration? {
        switch base {
        case .retried(_, let delay, _): delay
        case .circuitOpened(_, let coolDown): coolDown
        case .hedged(_, let delay), .hostPaused(_, let delay): delay
        default: nil
        }
    }

    /// The host, as `scheme://authority` (`circuitOpened`, `circuitClosed`, `limitChanged`,
    /// `hedged`).
    public var host: String? {
        switch base {
        case .circuitOpened(let host, _), .circuitClosed(let host), .limitChanged(let host, _), .hedged(let host, _),
            .hostPaused(let host, _):
            host
        default: nil
        }
    }

    /// The host's new adaptive limit (`limitChanged`).
    public var limit: Int? {
        if case .limitChanged(_, let limit) = base { return limit }
        return nil
    }

    /// Why the attempt is repeated: `HTTP 503`, or an error code (`retried`); why it is not:
    /// `budget`, `deadline`, `circuit` or `paused` (`retryRefused`).
    public var reason: String? {
        switch base {
        case .retried(_, _, let reason), .retryRefused(_, let reason): reason
        default: nil
        }
    }

    /// The response's status (`finished`; `failed` when a response came).
    public var status: HTTPResponse.Status? {
        switch base {
        case .finished(let status, _, _): status
        case .failed(_, let status, _): status
        default: nil
        }
    }

    /// curl's timings and sizes (`finished`).
    public var metrics: TransferMetrics? {
        if case .finished(_, let metrics, _) = base { return metrics }
        return nil
    }

    /// The time since the load began (`finished`, `failed`).
    public var duration: Duration? {
        switch base {
        case .finished(_, _, let duration), .failed(_, _, let duration): duration
        default: nil
        }
    }

    /// The error's code (`failed`).
    public var errorCode: ServiceError.Code? {
        if case .failed(let code, _, _) = base { return code }
        return nil
    }

    /// What the cache did (`cache`).
    public var cacheEvent: CacheEvent? {
        if case .cache(let event) = base { return event }
        return nil
    }
}
