/// The idle limit of one transfer (``TransferOptions/idleTimeout``): the longest time without a
/// byte in either direction once connected. A pure machine: its loop stamps activity from curl's
/// callbacks, asks it at ``nextCheck`` what it makes of what the loop observed, and fails the
/// transfer when it answers ``Verdict/expired``. Times are nanoseconds on the loop's coarse
/// monotonic clock.
///
/// Why not curl's low-speed check: curl averages the speed over a window of several seconds,
/// and a window that still holds the bytes just uploaded is not "slow", so after a request body
/// a stall ended up to 6 seconds past the limit (issue 31).
///
/// What counts as activity:
/// - a byte curl delivered (head or body) or read from the request body: stamped exactly;
/// - the socket's send queue moving (bytes the peer acknowledged), sampled at each check: curl
///   hands a request body to the kernel in large pieces, which then leave at the peer's pace;
/// - nothing while connecting (the connect timeout's business); the clock starts at connection;
/// - a transfer paused because its stream's consumer lags is not idle.
///
/// Precision: a stall after the head or mid-body ends the transfer within a few milliseconds
/// of the limit (the clock's tick and the loop's wake-up). While a request body may still be in
/// the send queue the queue is sampled every quarter of the limit, so a stall then ends within
/// a quarter of the limit of it, either side.
struct IdleWatch: Sendable {
    /// The limit, in nanoseconds (at least 1 ms).
    let limit: Int64
    /// When the transfer was handed to curl.
    let started: Int64
    /// The last activity seen.
    private(set) var lastActivity: Int64
    /// When the loop should next call ``check(now:observation:)``.
    private(set) var nextCheck: Int64
    /// The send queue's size at the last check.
    private var lastUnacknowledged = 0
    /// Whether the transfer sends a request body (whose bytes may wait in the send queue).
    private let sendsBody: Bool

    /// What the loop observed of the transfer at a check.
    struct Observation: Equatable, Sendable {
        /// When curl had connected (and, for TLS, finished the handshake), in nanoseconds after
        /// ``IdleWatch/started``; `nil` while still connecting.
        var connectedAfter: Int64?
        /// Bytes in the socket's send queue not yet acknowledged by the peer; `nil` if unknown.
        var unacknowledgedBytes: Int?
        /// Whether the transfer is paused because its stream's consumer lags.
        var isPaused = false
    }

    enum Verdict: Equatable, Sendable {
        /// No activity for the whole limit: fail the transfer with `timedOut`.
        case expired
        /// Check again at this time.
        case checkAt(Int64)
    }

    init(limit: Duration, started: Int64, sendsBody: Bool) {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let total = nanoseconds.overflow ? Int64.max / 4 : nanoseconds.partialValue &+ attoseconds / 1_000_000_000
        self.limit = min(max(total, 1_000_000), Int64.max / 4)
        self.started = started
        self.sendsBody = sendsBody
        lastActivity = started
        nextCheck = started + self.limit
        if sendsBody { nextCheck = min(nextCheck, started + quantum) }
    }

    /// How often the send queue is sampled while it may hold request bytes.
    var quantum: Int64 { max(limit / 4, 1_000_000) }

    /// A byte moved now (curl's header, write or read callback).
    mutating func touch(at now: Int64) {
        if now > lastActivity { lastActivity = now }
    }

    /// Decides, at or after ``nextCheck``, whether the transfer has been idle for the limit.
    mutating func check(now: Int64, observation: Observation) -> Verdict {
        guard let connectedAfter = observation.connectedAfter else {
            // Still connecting: the idle clock has not started.
            touch(at: now)
            nextCheck = now + quantum
            return .checkAt(nextCheck)
        }
        touch(at: started + connectedAfter)
        if observation.isPaused { touch(at: now) }
        if let queued = observation.unacknowledgedBytes, queued != lastUnacknowledged {
            // Bytes left the queue (or entered it) since the last check: some time after it.
            lastUnacknowledged = queued
            touch(at: now)
        }
        if now - lastActivity >= limit { return .expired }
        nextCheck = lastActivity + limit
        if sendsBody || lastUnacknowledged > 0 { nextCheck = min(nextCheck, now + quantum) }
        return .checkAt(nextCheck)
    }
}
