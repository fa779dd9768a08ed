internal import CourierCore
public import FoundationEssentials
public import HTTPTypes

/// An `HTTPTransport` that answers from routes you declare, records every request, and can
/// hold responses until you release them, for deterministic tests without a network.
///
/// ```swift
/// let mock = MockTransport()
/// mock.respond(to: .get, "/users/7", with: .json(#"{"id":7,"name":"Ada"}"#))
/// mock.respond(to: .get, "/feed", with: [.serviceUnavailable(retryAfter: .seconds(1)), .json("[]")])
/// let coordinator = RequestCoordinator(transport: mock)
/// ```
///
/// Routes match on method, path (exact, or a prefix when it ends in `*`), and optionally query
/// items and header fields; the most recently added matching route answers. A request no route
/// matches fails with `mockMissing`, naming the request and the routes there are.
public final class MockTransport: HTTPTransport, HonoursTransferCancellation {
    /// One request as the transport received it.
    public struct RecordedRequest: Sendable {
        public var request: HTTPRequest
        /// The body bytes when it was in memory or streamed (a streamed body is read whole,
        /// as a transport sends it); `nil` for a file body.
        public var body: Data?
        /// The trailer fields a streamed body ended with (empty when it had none).
        public var trailers = HTTPFields()
    }

    /// Answers a request; may throw a `ServiceError` to fail it.
    public typealias Handler = @Sendable (HTTPRequest, Data?) async throws -> Reply

    private struct Route {
        var method: HTTPRequest.Method?
        var path: String?
        var query: [String: String] = [:]
        var headers: HTTPFields = [:]
        var predicate: (@Sendable (HTTPRequest) -> Bool)?
        var latency: Duration?
        var handler: Handler

        func matches(_ request: HTTPRequest, path requestPath: String, query requestQuery: [String: String]) -> Bool {
            if let method, method != request.method { return false }
            if let path {
                if path.hasSuffix("*") {
                    if !requestPath.hasPrefix(path.dropLast()) { return false }
                } else if path != requestPath {
                    return false
                }
            }
            for (name, value) in query where requestQuery[name] != value { return false }
            for field in headers where request.headerFields[field.name] != field.value { return false }
            return predicate?(request) ?? true
        }

        var label: String {
            var text = "\(method?.rawValue ?? "*") \(path ?? "*")"
            if !query.isEmpty {
                text += "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
            }
            if !headers.isEmpty { text += " [" + headers.map { $0.name.rawName }.joined(separator: ", ") + "]" }
            if predicate != nil { text += " (predicate)" }
            return text
        }
    }

    private struct State {
        var routes: [Route] = []
        var recorded: [RecordedRequest] = []
        var latency: Duration?
        var holding = false
        var held: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextHeld: UInt64 = 0
        var cancelled = 0
    }

    private let state = LockedValue(State())
    /// Requests received, for ``waitForRequests(_:timeout:)``.
    private let arrivals = CountWaiters()

    /// Creates a transport with no routes.
    public init() {}

    /// Answers requests with `method` (any when nil) whose path, without the query, is `path`
    /// (or starts with it, when it ends in `*`), carrying every item of `query` and every field
    /// of `headers`, after `latency` when given.
    public func respond(
        to method: HTTPRequest.Method? = nil, _ path: String, query: [String: String] = [:], headers: HTTPFields = [:],
        latency: Duration? = nil, with reply: Reply
    ) {
        add(Route(method: method, path: path, query: query, headers: headers, latency: latency) { _, _ in reply })
    }

    /// Answers matching requests with `replies` in turn; the last one answers every later request
    /// (`[.serviceUnavailable(retryAfter: .seconds(1)), .json("{}")]` tests a retry in one line).
    public func respond(
        to method: HTTPRequest.Method? = nil, _ path: String, query: [String: String] = [:], headers: HTTPFields = [:],
        latency: Duration? = nil, with replies: [Reply]
    ) {
        precondition(!replies.isEmpty, "MockTransport.respond(with:) needs at least one reply")
        let next = LockedValue(0)
        add(
            Route(method: method, path: path, query: query, headers: headers, latency: latency) { _, _ in
                replies[
                    next.withLock { index in
                        defer { index += 1 }
                        return min(index, replies.count - 1)
                    }]
            })
    }

    /// Answers matching requests with `handler`.
    public func respond(
        to method: HTTPRequest.Method? = nil, _ path: String, query: [String: String] = [:], headers: HTTPFields = [:],
        latency: Duration? = nil, handler: @escaping Handler
    ) {
        add(Route(method: method, path: path, query: query, headers: headers, latency: latency, handler: handler))
    }

    /// Answers the requests `predicate` accepts with `handler`.
    public func respond(
        matching predicate: @escaping @Sendable (HTTPRequest) -> Bool, latency: Duration? = nil,
        handler: @escaping Handler
    ) {
        add(Route(predicate: predicate, latency: latency, handler: handler))
    }

    private func add(_ route: Route) { state.withLock { $0.routes.append(route) } }

    /// Answers every request no other route matches with `handler`.
    public func respondToAll(handler: @escaping Handler) {
        state.withLock { $0.routes.insert(Route(handler: handler), at: 0) }
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

    /// The requests received with `method` (any when nil) for `path` (without the query).
    public func requests(to method: HTTPRequest.Method? = nil, _ path: String) -> [RecordedRequest] {
        requests.filter { recorded in
            (method == nil || recorded.request.method == method) && Self.split(recorded.request.path).path == path
        }
    }

    /// How many requests were received.
    public var requestCount: Int { state.withLock { $0.recorded.count } }

    /// How many requests were cancelled while held or delayed (the transport saw the cancellation).
    public var cancelledCount: Int { state.withLock { $0.cancelled } }

    /// Returns true once `count` requests have arrived in all, or false after `timeout`
    /// (a minute by default), so that a test whose requests never come fails instead of hanging.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(60)) async -> Bool {
        await arrivals.wait(until: count, timeout: timeout)
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        let (bytes, trailers): (Data?, HTTPFields)
        if let streamed = body?.streamed {
            // Read as a transport sends it, and ended as a transfer is: by `options.cancellation`
            // or the task's cancellation (a producer that waits for an answer never ends here:
            // MockTransport answers after the whole body, so it cannot echo a duplex exchange).
            do {
                (bytes, trailers) = try await Self.cancellable(options.cancellation) { try await Self.drain(streamed) }
            } catch let error as ServiceError where error.code == .cancelled {
                throw noteCancelled()
            }
        } else {
            (bytes, trailers) = (body?.inMemoryBytes, HTTPFields())
        }
        let (path, query) = Self.split(request.path)
        let (route, latency, labels) = state.withLock { state in
            state.recorded.append(RecordedRequest(request: request, body: bytes, trailers: trailers))
            let route = state.routes.last { $0.matches(request, path: path, query: query) }
            let labels = route == nil ? state.routes.map(\.label) : []
            return (route, route?.latency ?? state.latency, labels)
        }
        arrivals.add()
        try await hold(cancellation: options.cancellation)
        if let latency {
            do {
                try await Self.cancellable(options.cancellation) { try await Task.sleep(for: latency) }
            } catch {
                throw noteCancelled()
            }
        }
        guard let route else {
            let known = labels.isEmpty ? "none" : labels.joined(separator: "; ")
            throw ServiceError(
                .mockMissing,
                "MockTransport has no route for \(request.method) \(request.path ?? "/") (routes: \(known)).")
        }
        let reply: Reply
        do {
            // A handler that suspends ends when the transfer is cancelled, as a network wait would.
            reply = try await Self.cancellable(options.cancellation) { try await route.handler(request, bytes) }
        } catch {
            throw ServiceError.wrapping(error)
        }
        switch reply.outcome {
        case .response(let response):
            return response
        case .file(let filePath, let status, let headers):
            guard let data = FileManager.default.contents(atPath: filePath) else {
                throw ServiceError(
                    .fileAccess, "MockTransport could not read \(filePath) for \(request.method) \(path).")
            }
            return TransportResponse(head: HTTPResponse(status: status, headerFields: headers), body: data)
        case .failure(let error):
            throw error
        }
    }

    /// The path without its query, and the query's items percent-decoded (`+` stays `+`).
    static func split(_ target: String?) -> (path: String, query: [String: String]) {
        let target = target ?? "/"
        guard let mark = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for item in target[target.index(after: mark)...].split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentEncoding.decode(parts[0])
            if query[name] == nil { query[name] = parts.count > 1 ? PercentEncoding.decode(parts[1]) : "" }
        }
        return (String(target[..<mark]), query)
    }

    /// Runs `operation`, cancelled by the task's cancellation or by `cancellation`.
    private static func cancellable<T: Sendable>(
        _ cancellation: TransferCancellation?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let cancellation else { return try await operation() }
        return try await cancellation.run(operation)
    }

    /// Waits while responses are held; the task's cancellation or `cancellation` ends the wait
    /// with `cancelled`.
    private func hold(cancellation: TransferCancellation?) async throws {
        let id: UInt64? = state.withLock { state in
            guard state.holding else { return nil }
            state.nextHeld += 1
            return state.nextHeld
        }
        guard let id else { return }
        defer { cancellation?.unregister() }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.holding || Task.isCancelled { return true }
                        state.held[id] = continuation
                        return false
                    }
                    if resumeNow {
                        if Task.isCancelled {
                            continuation.resume(throwing: CancellationError())
                        } else {
                            continuation.resume()
                        }
                        return
                    }
                    cancellation?.register { [state] in
                        let continuation = state.withLock { $0.held.removeValue(forKey: id) }
                        continuation?.resume(throwing: CancellationError())
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
