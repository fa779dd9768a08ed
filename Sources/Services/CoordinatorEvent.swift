internal import CourierCore
public import HTTPTypes

/// Something a ``RequestCoordinator`` did, for metrics, tracing and tests.
/// Events never carry credentials, bodies or query strings.
public struct CoordinatorEvent: Sendable {
    /// The load this event belongs to.
    public var requestID: UInt64
    /// What happened.
    public var kind: Kind

    /// What happened.
    public enum Kind: Sendable {
        /// A load began: method and URL without its query.
        case started(method: HTTPRequest.Method, url: String)
        /// Decorators ran (`count` of them).
        case decorated(count: Int)
        /// The load joined an identical one in flight instead of making its own transfer.
        case coalesced
        /// A transfer was repeated: `attempt` failed, the next starts after `delay`.
        case retried(attempt: Int, delay: Duration, reason: String)
        /// A decorator asked for the request to be sent once more.
        case replayed
        /// The load delivered a value: status, curl's timings and the time since it began.
        case finished(status: HTTPResponse.Status, metrics: TransferMetrics, duration: Duration)
        /// The load failed.
        case failed(code: ServiceError.Code, status: HTTPResponse.Status?, duration: Duration)
        /// The cache answered, missed, stored, revalidated or evicted. Evictions and store
        /// failures belong to no load: their `requestID` is 0.
        case cache(CacheEvent)
    }
}

/// Fans events out to subscribers, each with its own bounded buffer (oldest dropped).
final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<CoordinatorEvent>.Continuation] = [:]
        var nextSubscriber = 0
        var nextRequestID: UInt64 = 0
    }

    private let state = LockedValue(State())

    func subscribe(bufferingNewest limit: Int) -> AsyncStream<CoordinatorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: CoordinatorEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends an event to every subscriber; `kind` is not even built when there are none.
    func emit(_ requestID: UInt64, _ kind: @autoclosure () -> CoordinatorEvent.Kind) {
        let subscribers = state.withLock { $0.subscribers.isEmpty ? [] : Array($0.subscribers.values) }
        guard !subscribers.isEmpty else { return }
        let event = CoordinatorEvent(requestID: requestID, kind: kind())
        for subscriber in subscribers { subscriber.yield(event) }
    }

    func makeRequestID() -> UInt64 {
        state.withLock { state in
            state.nextRequestID += 1
            return state.nextRequestID
        }
    }

    func finishAll() {
        let subscribers = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
