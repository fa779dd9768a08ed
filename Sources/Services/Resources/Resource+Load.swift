public import Logging

extension Resource {
    /// Loads this resource on `coordinator` (by default the one in scope,
    /// ``RequestCoordinator/current``) and returns the decoded value. Throws `ServiceError` only.
    public func load(
        using coordinator: RequestCoordinator = .current, logger: Logger? = nil
    ) async throws(ServiceError) -> Response {
        try await coordinator.load(self, logger: logger).value
    }

    /// Loads this resource and returns the value with its response head, metrics and source.
    public func loadResponse(
        using coordinator: RequestCoordinator = .current, logger: Logger? = nil
    ) async throws(ServiceError) -> Loaded<Response> {
        try await coordinator.load(self, logger: logger)
    }

    /// The stored value first, then the network's: one request, one stream, for screens and
    /// endpoints that show cached data while fresh data loads.
    ///
    /// The stream yields the cached value (``Loaded/source`` `.memory` or `.disk`) when the
    /// resource's ``Resource/cachePolicy`` tiers hold one, then the network's value (`.network`,
    /// or `.revalidated` when the server answered 304), then ends. If the network fails after a
    /// cached value was yielded, the stream ends with the error and the cached value stands.
    /// Cancelling the consuming task cancels the load.
    ///
    /// With `refresh` ``UpdatesRefresh/whenStale``, a stored value still fresh under the cache
    /// policy is the only one yielded, with no request; the default, ``UpdatesRefresh/always``,
    /// always asks the network.
    public func updates(
        using coordinator: RequestCoordinator = .current, refresh: UpdatesRefresh = .always, logger: Logger? = nil
    ) -> AsyncThrowingStream<Loaded<Response>, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Loaded<Response>.self)
        let task = Task {
            do {
                let last = try await coordinator.loadUpdates(self, refresh: refresh, logger: logger) {
                    continuation.yield($0)
                }
                continuation.yield(last)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
