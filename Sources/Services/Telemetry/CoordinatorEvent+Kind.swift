internal import CourierCore
internal import HTTPTypes

extension CoordinatorEvent {
    /// What happened.
    ///
    /// A struct over a private enum rather than an enum, so that a new kind of event never
    /// breaks a caller's exhaustive `switch`. Switch on ``name`` (with a `default`) and read the
    /// fields that kind has; the others are `nil`:
    ///
    /// ```swift
    /// for await event in coordinator.events() where event.kind.name == .finished {
    ///     print(event.kind.status!, event.kind.duration!)
    /// }
    /// ```
    public struct Kind: Sendable, CustomStringConvertible {
        package enum Base: Sendable {
            case started(method: HTTPRequest.Method, url: String)
            case decorated(count: Int)
            case coalesced
            case retried(attempt: Int, delay: Duration, reason: String)
            case retryRefused(attempt: Int, reason: String)
            case replayed
            case circuitOpened(host: String, coolDown: Duration)
            case circuitClosed(host: String)
            case limitChanged(host: String, limit: Int)
            case hedged(host: String, delay: Duration)
            case hostPaused(host: String, delay: Duration)
            case finished(status: HTTPResponse.Status, metrics: TransferMetrics, duration: Duration)
            case failed(code: ServiceError.Code, status: HTTPResponse.Status?, duration: Duration)
            case cache(CacheEvent)
        }

        /// The event, as a value to switch on (inside the package).
        package let base: Base

        package init(_ base: Base) { self.base = base }

        /// A load began: method and URL without its query.
        package static func started(method: HTTPRequest.Method, url: String) -> Kind {
            Kind(.started(method: method, url: url))
        }
        /// Decorators ran (`count` of them).
        package static func decorated(count: Int) -> Kind { Kind(.decorated(count: count)) }
        /// The load joined an identical one in flight instead of making its own transfer.
        package static let coalesced = Kind(.coalesced)
        /// A transfer was repeated: `attempt` failed, the next starts after `delay`.
        package static func retried(attempt: Int, delay: Duration, reason: String) -> Kind {
            Kind(.retried(attempt: attempt, delay: delay, reason: reason))
        }
        /// The retry policy would repeat `attempt`, but `reason` (the host's retry budget, or
        /// the load's deadline) refused it.
        package static func retryRefused(attempt: Int, reason: String) -> Kind {
            Kind(.retryRefused(attempt: attempt, reason: reason))
        }
        /// A decorator asked for the request to be sent once more.
        package static let replayed = Kind(.replayed)
        /// This load's attempt opened `host`'s circuit (or a failed probe opened it again)
        /// for `coolDown`.
        package static func circuitOpened(host: String, coolDown: Duration) -> Kind {
            Kind(.circuitOpened(host: host, coolDown: coolDown))
        }
        /// This load's probe closed `host`'s circuit.
        package static func circuitClosed(host: String) -> Kind { Kind(.circuitClosed(host: host)) }
        /// `host`'s adaptive limit moved to `limit` when this load's attempt came back.
        package static func limitChanged(host: String, limit: Int) -> Kind {
            Kind(.limitChanged(host: host, limit: limit))
        }
        /// This load's first attempt to `host` was still out after `delay`: a hedge went.
        package static func hedged(host: String, delay: Duration) -> Kind { Kind(.hedged(host: host, delay: delay)) }
        /// This load's attempt got a `429` or `503` with `Retry-After`: `host` is paused for
        /// `delay`, here and for the fleet.
        package static func hostPaused(host: String, delay: Duration) -> Kind {
            Kind(.hostPaused(host: host, delay: delay))
        }
        /// The load delivered a value: status, curl's timings and the time since it began.
        package static func finished(status: HTTPResponse.Status, metrics: TransferMetrics, duration: Duration) -> Kind
        {
            Kind(.finished(status: status, metrics: metrics, duration: duration))
        }
        /// The load failed.
        package static func failed(code: ServiceError.Code, status: HTTPResponse.Status?, duration: Duration) -> Kind {
            Kind(.failed(code: code, status: status, duration: duration))
        }
        /// The cache answered, missed, stored, revalidated or evicted. Evictions and store
        /// failures belong to no load: their `requestID` is 0.
        package static func cache(_ event: CacheEvent) -> Kind { Kind(.cache(event)) }

        /// Which kind of event this is.
        public var name: Name {
            switch base {
            case .started: .started
            case .decorated: .decorated
            case .coalesced: .coalesced
            case .retried: .retried
            case .retryRefused: .retryRefused
            case .replayed: .replayed
            case .circuitOpened: .circuitOpened
            case .circuitClosed: .circuitClosed
            case .limitChanged: .limitChanged
            case .hedged: .hedged
            case .hostPaused: .hostPaused
            case .finished: .finished
            case .failed: .failed
            case .cache: .cache
            }
        }

        public var description: String { "\(base)" }
    }
}
