public import HTTPTypes
public import Logging

extension RequestCoordinator {
    /// Loads `url` with a `GET` and decodes the body as `type`, without declaring a ``Resource``:
    ///
    /// ```swift
    /// let user = try await coordinator.load(User.self, from: "https://api.example.com/v1/users/7").value
    /// ```
    ///
    /// The load goes through the same pipeline as a resource's: the coordinator's decorators,
    /// retries and events, coalescing with identical `GET`s in flight, the cache as
    /// `cachePolicy` says (default `CachePolicy.networkOnly`), a 2xx status (others are
    /// `unacceptableStatus`), and decoding as a resource's: `Data` and `String` take the body
    /// as is, any other type is JSON read by `decoder` (default `CourierJSONDecoder`).
    /// A URL that is not a valid absolute http(s) URL throws `invalidRequest` before anything
    /// starts. Throws `ServiceError` only.
    @concurrent public nonisolated func load<Value: Decodable & Sendable>(
        _ type: Value.Type, from url: String, cachePolicy: CachePolicy = .networkOnly,
        decoder: (any JSONBodyDecoder)? = nil, logger: Logger? = nil
    ) async throws(ServiceError) -> Loaded<Value> {
        let request = try HTTPRequest(method: .get, urlString: url)
        return try await load(type, from: request, cachePolicy: cachePolicy, decoder: decoder, logger: logger)
    }

    /// Sends `request` (with `body`) and decodes the answer as `type`, without declaring a
    /// ``Resource``: ``load(_:from:cachePolicy:decoder:logger:)`` for any method and headers.
    ///
    /// ```swift
    /// var request = try HTTPRequest(method: .post, urlString: "https://api.example.com/v1/search")
    /// request.headerFields[.accept] = "application/json"
    /// let hits = try await coordinator.load([Hit].self, from: request, body: try .json(query)).value
    /// ```
    ///
    /// Unlike ``send(_:body:logger:)``, which returns any status as is, only a 2xx status
    /// succeeds. `GET` and `HEAD` coalesce with identical loads in flight; other methods never do.
    @concurrent public nonisolated func load<Value: Decodable & Sendable>(
        _ type: Value.Type, from request: HTTPRequest, body: RequestBody? = nil,
        cachePolicy: CachePolicy = .networkOnly, decoder: (any JSONBodyDecoder)? = nil, logger: Logger? = nil
    ) async throws(ServiceError) -> Loaded<Value> {
        let resource = AdHocResource<Value>(request: request, body: body, cachePolicy: cachePolicy, decoder: decoder)
        let (host, plan) = try await takeTurn(
            LoadPlan(resource: resource, request: request, coordinator: self, logger: logger))
        defer { leaveTurn(host) }
        return try await run(plan) { [plan] (execution: Execution) async throws -> Loaded<Value> in
            try await Self.finish(resource, plan: plan, execution: execution)
        }
    }
}
