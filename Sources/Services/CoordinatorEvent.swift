internal import CourierCore
internal import HTTPTypes

/// Something a ``RequestCoordinator`` did, for metrics, tracing and tests.
/// Events never carry credentials, bodies or query strings.
public struct CoordinatorEvent: Sendable {
    /// The load this event belongs to.
    public var requestID: UInt64
    /// What happened.
    public var kind: Kind
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
