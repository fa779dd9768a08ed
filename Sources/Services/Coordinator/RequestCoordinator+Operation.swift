package import FoundationEssentials
package import HTTPTypes
package import Logging

extension RequestCoordinator {
    /// Sends `request` as the named `operation` and returns the response whatever its status:
    /// the entry point of generated clients (`CourierOpenAPI`), which read every status
    /// themselves, declared errors included.
    ///
    /// The load goes through the whole pipeline: decorators (and their replays), retries
    /// (`retryPolicy`, or the coordinator's when `nil`), coalescing of identical `GET`s and
    /// `HEAD`s in flight, the cache as `cachePolicy` says, events and the span, both of which
    /// carry `operation` (``CoordinatorEvent/operation``, span attribute `courier.operation`).
    /// Throws `ServiceError` only: a status never throws, a failed transfer does.
    @concurrent package nonisolated func load(
        operation: String, request: HTTPRequest, body: RequestBody?, cachePolicy: CachePolicy,
        retryPolicy: RetryPolicy?, logger: Logger?
    ) async throws -> Loaded<Data> {
        var operationResource = AdHocResource<Data>(
            request: request, body: body, cachePolicy: cachePolicy, decoder: nil)
        operationResource.acceptableStatus = 100..<1000
        operationResource.retryPolicy = retryPolicy
        let resource = operationResource
        var planned = LoadPlan(resource: resource, request: request, coordinator: self, logger: logger)
        planned.operation = operation
        let (host, plan) = try await takeTurn(planned)
        defer { leaveTurn(host) }
        return try await run(plan) { [plan] (execution: Execution) async throws -> Loaded<Data> in
            try await Self.finish(resource, plan: plan, execution: execution)
        }
    }

    /// Sends `request` as the named `operation` and returns at its head, whatever its status;
    /// the body follows as chunks (``StreamedLoad/body``). As ``load(operation:request:body:cachePolicy:retryPolicy:logger:)``
    /// but never cached nor coalesced: decorators and retries run before the head, never once
    /// the body began. Throws `ServiceError` only.
    @concurrent package nonisolated func stream(
        operation: String, request: HTTPRequest, body: RequestBody?, retryPolicy: RetryPolicy?, logger: Logger?
    ) async throws -> StreamedLoad {
        var operationResource = AdHocResource<Data>(
            request: request, body: body, cachePolicy: .networkOnly, decoder: nil)
        operationResource.acceptableStatus = 100..<1000
        operationResource.retryPolicy = retryPolicy
        let resource = operationResource
        var plan = LoadPlan(resource: resource, request: request, coordinator: self, logger: logger)
        plan.operation = operation
        return try await stream(resource, plan: plan)
    }
}
