internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

/// A `text/event-stream` response read as typed events: from
/// ``RequestCoordinator/events(_:reconnection:logger:)`` or ``Resource/events(using:reconnection:logger:)``.
///
/// ```swift
/// for try await event in Notifications(topic: "deploys").events() {
///     print(event.event, event.data)
/// }
/// ```
///
/// Each connection is a streamed load through the coordinator: its decorators (a token refresh
/// included), retries before the head, status validation, events, metrics and span, like
/// ``RequestCoordinator/stream(_:logger:)``. The request asks for `text/event-stream` and, once
/// a block with an `id` field has ended, carries that ID as `Last-Event-ID`.
///
/// When a connection drops or the server ends its response, the stream connects again after the
/// reconnection delay (``Reconnection/delay``, until the server's `retry` field sets another),
/// as the HTML standard's `EventSource` does. A reconnection sends the request again: for a
/// request that is not idempotent (a `POST` that starts a completion), use ``Reconnection/never``
/// unless the server resumes from `Last-Event-ID`. A 204 ends the stream. A status other than
/// 200 (408, 429, 502, 503 and 504 reconnect, after the resource's own retries), a response that
/// is not `text/event-stream`, or a line or event over ``maximumEventSize`` bytes ends it with a
/// `ServiceError` (`unacceptableStatus`, `malformedResponse`, `responseTooLarge`), after the
/// events that came before it. So do cancelling the reading task (`cancelled`) and any shutdown
/// of the coordinator (`shutDown`): a graceful one does not wait for an event stream to end.
///
/// Each iteration opens its own connection; events are parsed as they arrive, with memory
/// bounded by ``maximumEventSize`` and the transport's stream buffer.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent

    /// When and how often a stream connects again.
    public struct Reconnection: Sendable, Hashable {
        /// The wait before a new connection, until the server's `retry` field sets another.
        public var delay: Duration
        /// Reconnections allowed in a row that bring no event; past them the stream ends (with
        /// the last connection's error, if it failed). 0: never reconnect.
        public var maximumAttempts: Int

        /// Creates a reconnection policy.
        public init(delay: Duration = .seconds(3), maximumAttempts: Int = 10) {
            self.delay = delay
            self.maximumAttempts = maximumAttempts
        }

        /// 3 seconds (what browsers wait), and at most 10 fruitless reconnections in a row.
        public static let standard = Reconnection()
        /// One connection: the stream ends when it does.
        public static let never = Reconnection(delay: .zero, maximumAttempts: 0)
    }

    /// When the stream connects again.
    public var reconnection: Reconnection
    /// The most bytes one line, or one event's data, may take (1 MiB by default).
    public var maximumEventSize = 1 << 20
    /// The ID the first connection sends as `Last-Event-ID` (empty: none), to resume a stream
    /// whose last event you stored.
    public var lastEventID = ""

    let connect: @Sendable (_ lastEventID: String) async throws -> StreamedLoad
    let clock: any Clock<Duration>
    let logger: Logger?

    init(
        reconnection: Reconnection, clock: any Clock<Duration>, logger: Logger?,
        connect: @escaping @Sendable (_ lastEventID: String) async throws -> StreamedLoad
    ) {
        self.reconnection = reconnection
        self.clock = clock
        self.logger = logger
        self.connect = connect
    }

    public func makeAsyncIterator() -> Iterator { Iterator(reader: EventStreamReader(self)) }

    /// Reads the events one by one.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: EventStreamReader

        public mutating func next() async throws -> ServerSentEvent? { try await reader.next() }
    }
}

/// The reading side of one iteration: connections, the parser over their bodies, and the
/// reconnection rules between them. Not `Sendable`: one task reads a stream. Dropping it drops
/// the open body, which stops its transfer.
final class EventStreamReader {
    private let connect: @Sendable (String) async throws -> StreamedLoad
    private let clock: any Clock<Duration>
    private let logger: Logger?
    private var parser: EventStreamParser
    private var reconnection: EventStreamReconnection
    private var body: TransportBody?
    private var chunks: TransportBody.Iterator?
    private var ready: [ServerSentEvent] = []
    private var readyIndex = 0
    private var finished = false
    /// An error to throw once the events parsed before it were read.
    private var failure: ServiceError?

    init(_ stream: EventStream) {
        connect = stream.connect
        clock = stream.clock
        logger = stream.logger
        parser = EventStreamParser(maximumEventSize: stream.maximumEventSize, lastEventID: stream.lastEventID)
        reconnection = EventStreamReconnection(
            delay: stream.reconnection.delay, maximumAttempts: stream.reconnection.maximumAttempts)
    }

    deinit { body?.cancel() }

    func next() async throws -> ServerSentEvent? {
        while true {
            if readyIndex < ready.count {
                defer { readyIndex += 1 }
                return ready[readyIndex]
            }
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            if let failure {
                self.failure = nil
                throw failure
            }
            if finished { return nil }
            if chunks == nil {
                if let ending = await open() { try await end(ending) }
                continue
            }
            let chunk: Data?
            do {
                chunk = try await chunks?.next()
            } catch {
                close()
                try await end(.failed(ServiceError.wrapping(error)))
                continue
            }
            guard let chunk else {
                close()
                try await end(.closed)
                continue
            }
            parse(chunk)
        }
    }

    /// Opens the next connection; how it ended when it cannot be read.
    private func open() async -> EventStreamReconnection.Ending? {
        let load: StreamedLoad
        do {
            load = try await connect(parser.lastEventID)
        } catch {
            return .failed(ServiceError.wrapping(error))
        }
        if load.response.status == .noContent {
            load.body.cancel()
            return .noContent
        }
        guard load.response.status == .ok else {
            load.body.cancel()
            return .failed(
                ServiceError(
                    .unacceptableStatus, "An event stream needs 200 OK, got \(load.response.status.code).",
                    response: load.response, bodyExcerpt: "status \(load.response.status.code)"))
        }
        let type = load.response.headerFields[.contentType] ?? ""
        guard MediaType.essence(of: type) == "text/event-stream" else {
            load.body.cancel()
            return .failed(
                ServiceError(
                    .malformedResponse,
                    "Expected an event stream (Content-Type: text/event-stream), got '\(type)'.",
                    response: load.response))
        }
        parser.restart()
        body = load.body
        chunks = load.body.makeAsyncIterator()
        return nil
    }

    /// Parses `chunk` into `ready`; an oversized event stops the stream once `ready` was read.
    private func parse(_ chunk: Data) {
        do {
            try parser.feed(chunk) { ready.append($0) }
        } catch {
            close()
            finished = true
            failure = ServiceError(
                .responseTooLarge,
                "An event stream line or event passed \(parser.maximumEventSize) bytes (EventStream.maximumEventSize).")
        }
        if let delay = parser.reconnectionTime { reconnection.serverSetDelay(delay) }
        if !ready.isEmpty { reconnection.received() }
    }

    private func close() {
        body?.cancel()
        body = nil
        chunks = nil
    }

    /// A connection ended: wait and reconnect, finish, or throw.
    private func end(_ ending: EventStreamReconnection.Ending) async throws {
        switch reconnection.ended(ending) {
        case .finish:
            finished = true
        case .fail(let error):
            finished = true
            throw error
        case .reconnect(let delay):
            var metadata: Logger.Metadata = ["courier.retry.attempt": "\(reconnection.attemptsWithoutEvent)"]
            if case .failed(let error) = ending { metadata["courier.error.code"] = "\(error.code)" }
            logger?.debug("Event stream reconnecting in \(delay)", metadata: metadata)
            do {
                try await clock.sleep(for: delay)
            } catch {
                finished = true
                throw ServiceError.cancelled()
            }
        }
    }
}
