public import Logging

extension Resource {
    /// Loads this resource on `coordinator` (by default the one in scope,
    /// ``RequestCoordinator/current``) and returns the decoded value. Throws `ServiceError` only.
    public func load(using coordinator: RequestCoordinator = .current, logger: Logger? = nil) async throws -> Response {
        try await coordinator.load(self, logger: logger).value
    }

    /// Loads this resource and returns the value with its response head, metrics and source.
    public func loadResponse(
        using coordinator: RequestCoordinator = .current, logger: Logger? = nil
    ) async throws -> Loaded<Response> {
        try await coordinator.load(self, logger: logger)
    }
}
