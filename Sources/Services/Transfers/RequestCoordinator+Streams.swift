internal import CourierCore
public import Logging

extension RequestCoordinator {
    /// Loads `resource` and returns as soon as its response head arrives; the body follows as
    /// an `AsyncSequence` of chunks (``StreamedLoad/body``), with memory bounded by the
    /// transport's stream buffer (`CurlTransport` pauses the transfer while the reader lags).
    ///
    /// ```swift
    /// let feed = try await coordinator.stream(EventFeed())
    /// for try await chunk in feed.body { parser.feed(chunk) }
    /// ```
    ///
    /// Decorators (a token refresh replays it), retries and status validation run before the
    /// head is returned, never after the body began: a 401 or a 503 is handled as for any load,
    /// and a status the resource does not accept throws `unacceptableStatus`. The load's events
    /// and span end with the head. Streams skip the cache and never share a transfer. Shutdown
    /// waits for open bodies to end, or, cancelling, fails them with `shutDown`.
    @concurrent public nonisolated func stream<R: Resource>(_ resource: R, logger: Logger? = nil) async throws
        -> StreamedLoad
    {
        try await stream(resource, plan: LoadPlan(resource: resource, coordinator: self, logger: logger))
    }

    /// Runs `plan` (of `resource`) as a stream: see ``stream(_:logger:)``. An endless stream (an
    /// event stream) is ended by a graceful shutdown too, instead of being waited for.
    nonisolated func stream<R: Resource>(_ resource: R, plan: LoadPlan, endless: Bool = false) async throws
        -> StreamedLoad
    {
        var plan = plan
        let receiver = StreamReceiver(acceptableStatus: resource.acceptableStatus)
        plan.receiver = receiver
        plan.coalescing = .never
        plan.cachePolicy = .networkOnly
        defer { receiver.take()?.discard() }  // a body nobody will read (a failed or cancelled load)
        let id = plan.id
        let response = try await run(plan) { [plan] execution in
            try Self.checkStatus(of: execution.response, for: resource, backend: plan.backend)
            return execution.response
        }
        guard let body = receiver.take() else {
            throw ServiceError(.malformedResponse, "The transfer ended without a body stream.", response: response.head)
        }
        let lease = StreamLease(body: body) { [weak self] in
            guard let self else { return }
            Task { await self.endStream(id) }
        }
        guard await openStream(id, lease: lease, endless: endless) else {
            lease.end()
            body.discard()
            throw ServiceError(.shutDown, "The coordinator shut down before the body could be read.")
        }
        return StreamedLoad(
            response: response.head, metrics: response.metrics, requestID: id,
            body: TransportBody(
                StreamedLoad.Chunks(body: body, lease: lease), onCancel: { body.cancel() }, trailers: { body.trailers })
        )
    }

    /// Counts an open body (shutdown waits for it); false once shut down.
    private func openStream(_ id: UInt64, lease: StreamLease, endless: Bool) -> Bool {
        guard !isShutDown else { return false }
        openStreams[id] = { [weak lease] in lease?.shutDown() }
        if endless { endlessStreams.insert(id) }
        backgroundWork += 1
        return true
    }

    private func endStream(_ id: UInt64) {
        endlessStreams.remove(id)
        guard openStreams.removeValue(forKey: id) != nil else { return }
        backgroundWork -= 1
        resumeDrainWaitersIfIdle()
    }

    /// Fails open bodies with `shutDown`, every one or (`endlessOnly`, for a graceful shutdown)
    /// only the endless ones: shutdown no longer waits for them (their readers may be the very
    /// tasks waiting for the shutdown; only their server or reader ends an endless one).
    func cancelStreams(endlessOnly: Bool) {
        let ids = endlessOnly ? Array(endlessStreams) : Array(openStreams.keys)
        let stops = ids.compactMap { openStreams.removeValue(forKey: $0) }
        endlessStreams = []
        backgroundWork -= stops.count
        for stop in stops { stop() }
    }
}
