internal import CourierCore
internal import HTTPTypes
internal import Synchronization

/// Something a ``RequestCoordinator`` did, for metrics, tracing and tests.
/// Events never carry credentials, bodies or query strings.
public struct CoordinatorEvent: Sendable {
    /// The load this event belongs to.
    public var requestID: UInt64
    /// What happened.
    public var kind: Kind
    /// The operation the load performs, when it was started as one (the OpenAPI operation ID a
    /// `CourierOpenAPI` transport sends); `nil` for resource and one-off loads.
    public var operation: String?
}

/// Fans events out to subscribers, each with its own bounded buffer (oldest dropped).
final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<CoordinatorEvent>.Continuation] = [:]
        var nextSubscriber = 0
        /// Operation names of loads in flight, by request id.
        var operations: [UInt64: String] = [:]
    }

    private let state = LockedValue(State())
    /// `state.subscribers.count`, written under its lock: a load emits a few events, and with no
    /// subscriber (the usual case) each is then one atomic load rather than a lock.
    private let subscriberCount = Atomic<Int>(0)
    private let lastRequestID = Atomic<UInt64>(0)

    func subscribe(bufferingNewest limit: Int) -> AsyncStream<CoordinatorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: CoordinatorEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = continuation
            subscriberCount.store(state.subscribers.count, ordering: .releasing)
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            state.withLock { state in
                state.subscribers.removeValue(forKey: id)
                subscriberCount.store(state.subscribers.count, ordering: .releasing)
            }
        }
        return stream
    }

    /// Sends an event to every subscriber; `kind` is not even built when there are none.
    func emit(_ requestID: UInt64, _ kind: @autoclosure () -> CoordinatorEvent.Kind) {
        guard subscriberCount.load(ordering: .acquiring) > 0 else { return }
        let (subscribers, operation) = state.withLock { state in
            state.subscribers.isEmpty ? ([], nil) : (Array(state.subscribers.values), state.operations[requestID])
        }
        guard !subscribers.isEmpty else { return }
        let event = CoordinatorEvent(requestID: requestID, kind: kind(), operation: operation)
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Names the operation of load `requestID` (`nil` forgets it) for the events emitted meanwhile.
    func setOperation(_ operation: String?, for requestID: UInt64) {
        state.withLock { $0.operations[requestID] = operation }
    }

    func makeRequestID() -> UInt64 {
        lastRequestID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    func finishAll() {
        let subscribers = state.withLock { state in
            defer {
                state.subscribers.removeAll()
                subscriberCount.store(0, ordering: .releasing)
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
