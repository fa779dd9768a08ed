internal import CourierCore

/// When an event stream connects again, as a state machine: the reader reports how each
/// connection went, and gets back what to do next. No clock, no I/O, so that each rule has a
/// test of its own (`EventStreamReconnectionTests`).
///
/// The rules (the HTML standard's, with a bound it leaves to the client):
/// - a response that ends, or a connection that drops (an error a retry may fix: a timeout, a
///   refused or reset connection, a cut body, a 408/429/502/503/504 after the resource's own
///   retries), is followed by a new connection after the reconnection delay: the configured
///   one until the server's `retry` field sets another; a host whose circuit is open
///   (`circuitOpen`) is reconnected to once the circuit lets a probe through, if later;
/// - a 204 ends the stream; any other failure (a status the resource refuses, a response that
///   is not `text/event-stream`, a decorator that failed, cancellation, shutdown) ends it with
///   that error;
/// - at most `maximumAttempts` reconnections in a row may bring no event: past them the stream
///   ends, with the last connection's error if it failed. An event resets the count.
struct EventStreamReconnection: Sendable {
    /// How one connection ended.
    enum Ending {
        /// The response body ended (the server closed the stream).
        case closed
        /// The server answered 204 No Content: it wants no more connections.
        case noContent
        /// The connection could not be made, or failed while it was read.
        case failed(ServiceError)
    }

    /// What the reader does next.
    enum Decision {
        case reconnect(after: Duration)
        case finish
        case fail(ServiceError)
    }

    /// The wait before the next connection: the configured delay until a `retry` field sets one.
    private(set) var delay: Duration
    /// Reconnections allowed in a row without an event.
    let maximumAttempts: Int
    /// Reconnections made since the last event.
    private(set) var attemptsWithoutEvent = 0

    init(delay: Duration, maximumAttempts: Int) {
        self.delay = delay
        self.maximumAttempts = max(0, maximumAttempts)
    }

    /// An event arrived: the count of fruitless reconnections starts over.
    mutating func received() { attemptsWithoutEvent = 0 }

    /// The server's `retry` field asked for another reconnection time.
    mutating func serverSetDelay(_ delay: Duration) { self.delay = max(.zero, delay) }

    /// A connection ended: what now.
    mutating func ended(_ ending: Ending) -> Decision {
        let error: ServiceError?
        switch ending {
        case .noContent:
            return .finish
        case .closed:
            error = nil
        case .failed(let failure):
            guard Self.reconnects(after: failure) else { return .fail(failure) }
            error = failure
        }
        guard attemptsWithoutEvent < maximumAttempts else { return error.map(Decision.fail) ?? .finish }
        attemptsWithoutEvent += 1
        if let error, error.code == .circuitOpen || error.code == .hostPaused, let retryAfter = error.retryAfter {
            return .reconnect(after: max(delay, retryAfter))
        }
        return .reconnect(after: delay)
    }

    /// Whether a new connection may fare better after `error`.
    static func reconnects(after error: ServiceError) -> Bool {
        error.code == .truncatedBody || error.code == .circuitOpen || error.code == .hostPaused || error.isRetryable
    }
}
