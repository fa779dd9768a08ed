public import FoundationEssentials
public import HTTPTypes
internal import Synchronization

/// An `HTTPTransport` that answers from routes you declare, records every request, and can
/// hold responses until you release them, for deterministic tests without a network.
///
/// ```swift
/// let mock = MockTransport()
/// mock.respond(to: .get, "/users/7", with: .json(#"{"id":7,"name":"Ada"}"#))
/// let coordinator = RequestCoordinator(transport: mock)
/// ```
public final class MockTransport: HTTPTransport {
    /// A canned answer: a response, or a transport failure.
    public struct Reply: Sendable {
        enum Outcome: Sendable {
            case response(TransportResponse)
            case failure(ServiceError)
        }
        let outcome: Outcome

        /// A response with `status`, header fields and body.
        public static func status(_ status: Int, headers: HTTPFields = [:], body: Data = Data()) -> Reply {
            Reply(outcome: .response(TransportResponse(head: HTTPResponse(status: .init(code: status), headerFields: headers), body: body)))
        }

        /// A JSON response (`Content-Type: application/json`).
        public static func json(_ text: String, status: Int = 200, headers: HTTPFields = [:]) -> Reply {
            var fields = headers
            fields[.contentType] = "application/json"
            return .status(status, headers: fields, body: Data(text.utf8))
        }

        /// A transport failure with `code`, as a real transport would throw it.
        public static func failure(_ code: ServiceError.Code, _ message: String = "") -> Reply {
            Reply(outcome: .failure(ServiceError(code, message.isEmpty ? "Injected by MockTransport." : message)))
        }
    }

    /// One request as the transport received it.
    public struct RecordedRequest: Sendable {
        public var request: HTTPRequest
        /// The body bytes when it was in memory.
        public var body: Data?
    }

    /// Answers a request; may throw a `ServiceError` to fail it.
    public typealias Handler = @Sendable (HTTPRequest, Data?) async throws -> Reply

    private struct Route {
        var method: HTTPRequest.Method?
        var path: String?
        var handler: Handler
    }

    private struct State {
        var routes: [Route] = []
        var recorded: [RecordedRequest] = []
        var latency: Duration?
        var holding = false
        var held: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextHeld: UInt64 = 0
        var cancelled = 0
        var arrivalWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Creates a transport with no routes.
    public init() {}

    /// Answers requests with `method` (any when nil) whose path, without the query, is `path`.
    /// Later routes take precedence over earlier ones.
    public func respond(to method: HTTPRequest.Method? = nil, _ path: String, with reply: Reply) {
        respond(to: method, path) { _, _ in reply }
    }

    /// Answers matching requests with `handler`.
    public func respond(to method: HTTPRequest.Method? = nil, _ path: String, handler: @escaping Handler) {
        state.withLock { $0.routes.append(Route(method: method, path: path, handler: handler)) }
    }

    /// Answers every request no other route matches with `handler`.
    public func respondToAll(handler: @escaping Handler) {
        state.withLock { $0.routes.insert(Route(method: nil, path: nil, handler: handler), at: 0) }
    }

    /// Waits this long (on the task's clock) before answering each request.
    public func setLatency(_ latency: Duration?) { state.withLock { $0.latency = latency } }

    /// Holds every answer from now on until ``releaseResponses()``.
    public func holdResponses() { state.withLock { $0.holding = true } }

    /// Sends every held answer and stops holding.
    public func releaseResponses() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [:] }
            return Array(state.held.values)
        }
        for continuation in held { continuation.resume() }
    }

    /// Every request received so far, in order.
    public var requests: [RecordedRequest] { state.withLock { $0.recorded } }

    /// How many requests were received.
    public var requestCount: Int { state.withLock { $0.recorded.count } }

    /// How many requests were cancelled while held or delayed (the transport saw the cancellation).
    public var cancelledCount: Int { state.withLock { $0.cancelled } }

    /// Returns once `count` requests have arrived in all.
    public func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.recorded.count >= count { return true }
                state.arrivalWatchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        let bytes = body?.inMemoryBytes
        let (route, latency, ready) = state.withLock { state in
            state.recorded.append(RecordedRequest(request: request, body: bytes))
            let count = state.recorded.count
            let ready = state.arrivalWatchers.filter { $0.count <= count }.map(\.continuation)
            state.arrivalWatchers.removeAll { $0.count <= count }
            let path = request.path.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0 }
            let route = state.routes.last { route in
                (route.method == nil || route.method == request.method) && (route.path == nil || route.path == path)
            }
            return (route, state.latency, ready)
        }
        for continuation in ready { continuation.resume() }
        try await hold()
        if let latency {
            do { try await Task.sleep(for: latency) } catch { throw noteCancelled() }
        }
        guard let route else {
            throw ServiceError(
                .mockMissing, "MockTransport has no route for \(request.method) \(request.path ?? "/").")
        }
        let reply: Reply
        do {
            reply = try await route.handler(request, bytes)
        } catch {
            throw ServiceError.wrapping(error)
        }
        switch reply.outcome {
        case .response(let response): return response
        case .failure(let error): throw error
        }
    }

    /// Waits while responses are held; cancellation ends the wait with `cancelled`.
    private func hold() async throws {
        let id: UInt64? = state.withLock { state in
            guard state.holding else { return nil }
            state.nextHeld += 1
            return state.nextHeld
        }
        guard let id else { return }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.holding || Task.isCancelled { return true }
                        state.held[id] = continuation
                        return false
                    }
                    if resumeNow {
                        if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                    }
                }
            } onCancel: {
                let continuation = state.withLock { $0.held.removeValue(forKey: id) }
                continuation?.resume(throwing: CancellationError())
            }
        } catch {
            throw noteCancelled()
        }
    }

    private func noteCancelled() -> ServiceError {
        state.withLock { $0.cancelled += 1 }
        return .cancelled()
    }
}

extension ServiceError.Code {
    /// A test double or mock mode had nothing to answer a request with; the message names it.
    public static let mockMissing = ServiceError.Code(
        "mockMissing", suggestion: "Add a route or fixture for this request to the test double.")
}
