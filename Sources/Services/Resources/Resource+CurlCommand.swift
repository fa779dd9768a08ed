extension Resource {
    /// This resource's request as a `curl` command, secrets masked (see `CurlCommand`): the URL
    /// resolved in `coordinator`'s environment, the backend's and the resource's header fields
    /// and the body, before any decorator runs (credentials a decorator adds are masked anyway).
    ///
    /// ```swift
    /// print(try UserService(id: 7).curlCommand())
    /// // curl 'https://api.example.com/users/7' \
    /// //   -H 'Accept: application/json'
    /// ```
    ///
    /// A failed load's `ServiceError` carries the same command in its `curlCommand`.
    /// Throws what the load would: `invalidRequest` for a bad endpoint, `encodingFailed` for a
    /// body that cannot be encoded.
    public func curlCommand(using coordinator: RequestCoordinator = .current) throws(ServiceError) -> CurlCommand {
        let plan = LoadPlan(resource: self, coordinator: coordinator, logger: nil)
        if let error = plan.buildError { throw error }
        return CurlCommand(plan.request, body: plan.body)
    }
}
