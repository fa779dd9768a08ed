internal import FoundationEssentials
public import HTTPTypes
public import Logging

/// The real transport: libcurl's multi interface driven by event-loop threads
/// (``Configuration/loops``: one per two cores, at most 4, by default).
///
/// Create one per process (or per server) and share it: connections, TLS sessions and
/// DNS results are reused across every request it sends. Call ``shutdown(cancellingInFlight:)``
/// before dropping it to drain what is in flight; dropping it cancels what is left.
///
/// ```swift
/// let transport = CurlTransport()
/// let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/")
/// let response = try await transport.send(request)
/// print(response.head.status, response.body.count)
/// await transport.shutdown()
/// ```
public final class CurlTransport: HTTPTransport, HonoursTransferCancellation {
    /// Settings fixed for the transport's lifetime. Every property has a production default.
    public struct Configuration: Sendable {
        /// Connections kept open per host at most; 0 is unlimited. 64 by default.
        public var maximumConnectionsPerHost = 64
        /// Connections open at most, all hosts together; 0 is unlimited. 0 by default.
        public var maximumConnections = 0
        /// Idle connections kept for reuse; 0 lets curl size its cache. 0 by default.
        public var maximumIdleConnections = 0
        /// Bytes a streamed response body may buffer before the transfer pauses, and a streamed
        /// request body before its sequence waits. 256 KiB by default.
        public var streamBufferSize = 256 << 10
        /// Bytes of released body buffers (32 KiB to 1 MiB each) kept for the next responses;
        /// 0 keeps none. 16 MiB by default. Larger bodies always go straight back to the system,
        /// and ``CurlTransport/shutdown(cancellingInFlight:)`` releases what is kept.
        public var bodyBufferPoolSize = 16 << 20
        /// The loop threads' name, as profilers show it: `courier-curl-0`, `courier-curl-1`, … with
        /// several loops (shortened to fit Linux's 15 bytes), the name itself with one.
        /// "courier-curl" by default.
        public var threadName = "courier-curl"
        /// Event loops: each its own thread, curl multi handle and connection pool. Transfers
        /// spread over them, so one busy host can use as many cores; a light load keeps to the
        /// first loop and its warm connections (new transfers spill to the next loop once one
        /// holds 16 unfinished; so a busy HTTP/2 host gets up to one connection per loop, and a
        /// burst of a few loads shares one). The connection limits hold for the transport as
        /// a whole (split across loops), so there are never more loops than
        /// ``maximumConnectionsPerHost`` or ``maximumConnections`` allow connections.
        /// `1` runs everything on one thread, as before loops could be several. By default, half
        /// the active processors, at least 1 and at most 4 (``defaultLoops``).
        public var loops = Configuration.defaultLoops

        /// Names answered from here instead of from DNS (see ``AddressOverride``). Empty by
        /// default. They never expire; a name without an override is looked up as usual.
        public var addressOverrides: [AddressOverride] = []
        /// Whether the addresses of a name are tried in a random order rather than as DNS (or
        /// the override) lists them, to spread connections over the replicas behind one name.
        /// The order is drawn when an answer enters the DNS cache: a name from DNS at each
        /// lookup (cached for 60 s), so connections opened within that time go to the same
        /// address first; an override each time the transport sets up one of its pooled curl
        /// handles (a new one, or one reset after a transfer that opened a connection), so new
        /// connections spread. `false` by default.
        public var shufflesAddresses = false
        /// Where connections leave from: a local address or a network interface. `nil` (the
        /// system chooses) by default. A binding that fails (an address the machine does not
        /// have) fails the transfer with `invalidRequest`.
        public var localBinding: LocalBinding?
        /// Connections older than this are not reused for a new request (an open transfer is
        /// not interrupted), so a long-lived client moves to new replicas behind a load
        /// balancer or DNS name. Counted in whole seconds, rounded up, and checked when a
        /// connection is about to be reused: one is reused up to a second past its age. `nil`
        /// (no limit) by default. libcurl has no limit on requests per connection; this age is
        /// the way to recycle connections.
        public var maximumConnectionAge: Duration?

        /// The default for ``loops``: half the active processors, at least 1, at most 4.
        ///
        /// Why half: a loop thread does about half the CPU work of a request (curl, the socket,
        /// the response buffer: 40% for a `load()`, up to 70% for a bare `send`, measured with
        /// `courier-bench`); the rest runs on the caller's tasks, on other cores. So one loop
        /// keeps about two cores busy before it becomes the bottleneck. Why at most 4: each loop opens its own connections to a busy host, and 4
        /// loops already carry about 4 × 50,000 small requests/s. Set ``loops`` to go further.
        public static var defaultLoops: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount / 2)) }

        /// Creates the default configuration.
        public init() {}
    }

    /// The configuration in force.
    let configuration: Configuration
    /// The loops, and the task executor over their threads.
    let group: CurlLoopGroup
    /// Large body buffers, reused across responses.
    let bodyBuffers: BodyBufferPool
    private let backgroundLogger: Logger?

    /// Starts a transport and its loop threads.
    public init(configuration: Configuration = Configuration(), backgroundLogger: Logger? = nil) {
        self.configuration = configuration
        self.backgroundLogger = backgroundLogger
        bodyBuffers = BodyBufferPool(capacity: configuration.bodyBufferPoolSize)
        group = CurlLoopGroup(
            count: configuration.loops,
            limits: .init(
                connectionsPerHost: configuration.maximumConnectionsPerHost,
                connections: configuration.maximumConnections,
                idleConnections: configuration.maximumIdleConnections,
                idleHandles: 256),
            connections: ConnectionSettings(configuration),
            threadName: configuration.threadName)
    }

    deinit {
        group.shutdownDetached()
    }

    /// The loop threads, as a task executor. Code that does little besides networking (a
    /// proxy, a crawler, a batch of loads) runs faster in a task that prefers it: a transfer
    /// started there runs on the loop of the task's thread and resumes the task right there,
    /// with no hand-off between threads. Tasks entering the preference, and child tasks,
    /// spread over the loops in turn. The price: while such a task computes, its loop does no
    /// network work, so keep heavy or blocking work out of it. Loads started from such a task
    /// keep the preference.
    ///
    /// ```swift
    /// let body = try await withTaskExecutorPreference(transport.taskExecutor) {
    ///     try await transport.send(request).body
    /// }
    /// ```
    ///
    /// Once the transport has shut down, such tasks continue on the global executor.
    public var taskExecutor: (any TaskExecutor)? { group }

    /// Stops accepting requests, then waits for those in flight to finish (or cancels them
    /// with `shutDown` when `cancellingInFlight` is `true`) and releases curl's resources.
    public func shutdown(cancellingInFlight: Bool = false) async {
        backgroundLogger?.debug(
            "courier transport shutting down", metadata: ["courier.cancel": "\(cancellingInFlight)"])
        await group.shutdown(cancelInFlight: cancellingInFlight)
        bodyBuffers.drain()
    }

    /// What the connection pool holds right now: open, in-use and idle connections by origin,
    /// and the transfers running and waiting, per loop. Each loop answers between two rounds of
    /// its network work, so the figures are a moment's, not a transaction's.
    ///
    /// ```swift
    /// let pool = await transport.poolSnapshot()
    /// for (origin, connections) in pool.connections {
    ///     print(origin, connections.open, connections.inUse, connections.idle)
    /// }
    /// ```
    public func poolSnapshot() async -> ConnectionPoolSnapshot {
        var loops: [ConnectionPoolSnapshot.Loop] = []
        for loop in group.loops { loops.append(await loop.poolSnapshot()) }
        return ConnectionPoolSnapshot(loops: loops)
    }

    /// Sends a request and returns the whole response in memory, inflated.
    ///
    /// - Throws: `ServiceError` (`invalidRequest`, `timedOut`, `cannotConnect`,
    ///   `dnsFailed`, `tlsFailed`, `pinningFailed`, `connectionClosed`, `truncatedBody`,
    ///   `malformedResponse`, `headersTooLarge`, `decompressionFailed`,
    ///   `unsupportedEncoding`, `responseTooLarge`, `tooManyRedirects`, `redirectRefused`,
    ///   `fileAccess`, `cancelled`, `shutDown`, `networkFailed`).
    @concurrent public func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        defer { options.progress?.finish() }
        let (hop, redirects) = try await followRedirects(request, body: body, options: options, streamed: false)
        return try Self.response(of: hop, redirects: redirects, options: options)
    }

    /// Sends a request and returns as soon as the response head arrives; the body follows
    /// as an `AsyncSequence` of chunks, inflated as they arrive. The transfer pauses while
    /// the consumer lags (``Configuration/streamBufferSize``) and stops when the consumer
    /// stops iterating, drops the body, calls `cancel()` on it, or its task is cancelled.
    @concurrent public func stream(
        _ request: HTTPRequest, body: RequestBody? = nil, options: TransferOptions = TransferOptions()
    )
        async throws -> StreamingTransportResponse
    {
        let streamed = try await streamResponse(request, body: body, options: options)
        var metrics = TransferMetrics()
        metrics.redirectCount = streamed.redirectCount
        metrics.decodedContentEncoding = streamed.body.codings.fieldValue
        let channel = streamed.body.channel
        return StreamingTransportResponse(
            head: streamed.head, metrics: metrics,
            body: TransportBody(streamed.body, onCancel: { channel.close() }, trailers: { channel.trailers }))
    }

    /// ``stream(_:body:options:)``'s work, returning the transport's own body stream (whose
    /// buffer high-water mark the tests read).
    func streamResponse(_ request: HTTPRequest, body: RequestBody? = nil, options: TransferOptions = TransferOptions())
        async throws
        -> StreamedResponse
    {
        let (hop, redirects) = try await followRedirects(request, body: body, options: options, streamed: true)
        guard let channel = hop.channel else {
            throw ServiceError(.malformedResponse, "The transfer ended without a body stream.")
        }
        var head = hop.head
        var codings = ContentCodings.identity
        if options.decompressesResponses && hop.mayBeEncoded {
            do {
                codings = try ContentCodings(headers: head.headerFields)
            } catch {
                channel.close()
                throw error
            }
            if !codings.isIdentity {
                head.headerFields[.contentEncoding] = nil
                head.headerFields[.contentLength] = nil
            }
        }
        return StreamedResponse(
            head: head, redirectCount: redirects,
            body: ResponseBodyStream(
                channel: channel, codings: codings, limit: options.maximumBodySize,
                onEnd: { options.progress?.finish() }))
    }

    /// Runs hops until one is not a redirect to follow.
    ///
    /// Its frame lives as long as the transfer (and while it waits for a connection), so what
    /// happens between hops (logs, the next hop) is done in synchronous helpers, whose
    /// temporaries sit on the thread's stack for a moment rather than in this frame.
    private nonisolated(nonsending) func followRedirects(
        _ request: HTTPRequest, body: RequestBody?, options: TransferOptions, streamed: Bool
    ) async throws -> (HopResult, Int) {
        if !options.requestIsValidated { try RequestValidation.validate(request) }
        var hop = RedirectHop(request: request, body: body)
        var redirects = 0
        while true {
            let result: HopResult
            do {
                result = try await perform(hop, options: options, streamed: streamed)
            } catch let error as ServiceError {
                logFailedHop(error, redirects: redirects, options: options)
                throw error
            }
            guard let next = try nextHop(after: result, of: hop, redirects: &redirects, options: options) else {
                return (result, redirects)
            }
            hop = next
        }
    }

    /// The request's logger when the caller gave one (its metadata carries the request id).
    private func logger(for options: TransferOptions) -> Logger? { options.logger ?? backgroundLogger }

    @inline(never)
    private func logFailedHop(_ error: ServiceError, redirects: Int, options: TransferOptions) {
        guard let logger = logger(for: options), logger.logLevel <= .debug else { return }
        logger.debug(
            "courier transfer failed",
            metadata: ["courier.error.code": "\(error.code)", "courier.redirect.count": "\(redirects)"])
    }

    /// The hop that follows `result`'s redirect (counted in `redirects`), or nil when there is
    /// none to follow; throws `tooManyRedirects` or a refused redirect.
    @inline(never)
    private func nextHop(
        after result: HopResult, of hop: RedirectHop, redirects: inout Int, options: TransferOptions
    ) throws -> RedirectHop? {
        let logger = logger(for: options)
        if let logger, logger.logLevel <= .trace {
            logger.trace(
                "courier transfer hop finished",
                metadata: [
                    "courier.response.status": "\(result.head.status.code)",
                    "courier.redirect.count": "\(redirects)",
                ])
        }
        guard let target = result.redirectURL else { return nil }
        redirects += 1
        if redirects > options.redirects.maximumRedirects {
            throw ServiceError(
                .tooManyRedirects, "More than \(options.redirects.maximumRedirects) redirects.",
                response: result.head)
        }
        let next = try hop.following(
            status: result.head.status.code, to: target, policy: options.redirects, response: result.head)
        if let logger, logger.logLevel <= .trace {
            logger.trace("courier following redirect", metadata: ["courier.redirect.count": "\(redirects)"])
        }
        return next
    }

    /// Runs one hop on a loop and waits for it (for its head, when streamed). The prepared
    /// request goes straight into the transfer, never into an async frame held for the hop.
    private nonisolated(nonsending) func perform(_ hop: RedirectHop, options: TransferOptions, streamed: Bool)
        async throws -> HopResult
    {
        let transfer = makeTransfer(hop, options: options)
        let loop = group.loopForTransfer()
        defer { options.cancellation?.unregister() }
        // The result was built on the loop thread; see TSanHandoff for why TSan needs telling.
        defer { TSanHandoff.acquire(transfer) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HopResult, any Error>) in
                if streamed {
                    let channel = BodyChannel(
                        highWater: configuration.streamBufferSize,
                        resume: { [weak transfer] in if let transfer { loop.unpause(transfer) } },
                        cancel: { [weak transfer] in if let transfer { loop.cancel(transfer) } })
                    transfer.delivery = .streamed(continuation, channel)
                } else {
                    transfer.delivery = .buffered(continuation)
                }
                // Cancelled already: cancels before the start, which then never runs it. Holds
                // the transfer strongly (a weak reference would give it a side table, and every
                // retain and release of it the slow path) until `unregister`, below.
                options.cancellation?.register { loop.cancel(transfer) }
                loop.start(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }
}

/// A response whose body arrives as the transport's own stream of chunks.
struct StreamedResponse: Sendable {
    /// The status and header fields (without `Content-Encoding` when Courier inflates).
    var head: HTTPResponse
    /// Redirects followed before this response.
    var redirectCount: Int
    /// The body, chunk by chunk.
    var body: ResponseBodyStream
}
