public import CourierServices
public import Foundation
public import HTTPTypes
public import Logging
public import OpenAPIRuntime

/// A `ClientTransport` for clients made by swift-openapi-generator that sends every operation
/// through a `RequestCoordinator`, so the coordinator's decorators (token refresh),
/// retries (`Retry-After`), coalescing of identical `GET`s, cache, events, tracing and metrics
/// all apply to generated code.
///
/// ```swift
/// let transport = CourierClientTransport(coordinator: coordinator)
/// let client = Client(serverURL: URL(string: "https://api.example.com")!, transport: transport)
/// ```
///
/// The operation ID names each load: it picks the load's cache and retry policies
/// (``Configuration``), and is `CoordinatorEvent.operation` in events and the span
/// attribute `courier.operation`.
///
/// Every status comes back to the generated client, which maps it to the operation's declared
/// outputs. A failed transfer throws a `ServiceError`; the runtime wraps it in a `ClientError`
/// whose `underlyingError` is that `ServiceError`.
///
/// Bodies are buffered, not streamed: the coordinator sends and delivers whole bodies today.
/// A request body is collected in memory (it then replays on retries); one over
/// ``Configuration/maximumRequestBodySize`` fails with `invalidRequest` before anything is
/// sent. A response over the coordinator's `TransferOptions.maximumBodySize` (64 MiB by
/// default) fails with `responseTooLarge`; a delivered one reaches the runtime in 64 KiB chunks,
/// never copied whole a second time.
public struct CourierClientTransport: ClientTransport {
    /// The coordinator every operation goes through.
    public let coordinator: RequestCoordinator
    /// Per-operation policies and limits.
    public let configuration: Configuration
    /// Logs each load at debug level; `nil`, the default, is silent.
    public let logger: Logger?

    /// Creates a transport over `coordinator` (default: the task's `RequestCoordinator.current`).
    public init(
        coordinator: RequestCoordinator = .current, configuration: Configuration = Configuration(),
        logger: Logger? = nil
    ) {
        self.coordinator = coordinator
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends one operation's request to `baseURL` and returns the response, whatever its status.
    /// Throws `ServiceError` only.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let target = try Self.absolute(request, baseURL: baseURL)
        let payload = try await Self.collect(body, upTo: configuration.maximumRequestBodySize)
        let loaded = try await coordinator.load(
            operation: operationID, request: target, body: payload,
            cachePolicy: configuration.cachePolicy(for: operationID),
            retryPolicy: configuration.retryPolicies[operationID], logger: logger)
        let responseBody = request.method == .head ? nil : DataChunks.body(loaded.value)
        return (loaded.response, responseBody)
    }
}
