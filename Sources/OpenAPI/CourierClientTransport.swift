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
/// Response bodies stream when nothing needs them whole: an operation whose cache policy is
/// `networkOnly` (the default) streams its response when it is not a `GET` or `HEAD` (only
/// those coalesce), when its request accepts a type that is not JSON or text (a binary download,
/// e.g. `application/octet-stream`, even with JSON error responses), or when it is named in ``Configuration/streamedOperations``.
/// A streamed body reaches the runtime chunk by chunk as it arrives, is read once, and stops
/// the transfer when the client lets it go; decorators (a token refresh) and retries (a 503
/// with `Retry-After`) still run, but only before the head: a body cut short is never retried.
/// A cached operation, or a `GET` that may coalesce, is buffered: the coordinator needs its
/// whole body to store or share it. It must fit `TransferOptions.maximumBodySize` (64 MiB by
/// default; `responseTooLarge` otherwise) and reaches the runtime in 64 KiB chunks, never
/// copied whole a second time.
///
/// A request body that a retry or a decorator's replay may send again (an idempotent request, a
/// retry policy that retries any, or a coordinator with a `BearerTokenDecorator`) is read once
/// and kept so that it replays on retries and decorator replays: in
/// memory up to ``Configuration/requestBodySpoolThreshold`` (1 MiB by default), else spooled
/// chunk by chunk to a temporary file (in ``Configuration/requestBodySpoolDirectory``) that each
/// attempt re-reads, so a large upload is never held whole. Any other body (a `POST` under the
/// default policy, with no replaying decorator) is kept in memory only when its declared length
/// is within the threshold; otherwise it streams as it is produced, with backpressure and no
/// file. The file is removed when the request
/// ends (success, failure or cancellation); for a streamed response, as soon as its head is back,
/// since no attempt can follow (an upload still in flight keeps reading its open file). A body
/// over ``Configuration/maximumRequestBodySize`` fails with `invalidRequest`, a spool file that
/// cannot be written with `fileAccess`; either way before anything is sent.
public struct CourierClientTransport: ClientTransport {
    /// The coordinator every operation goes through.
    public let coordinator: RequestCoordinator
    /// Per-operation policies and limits.
    let configuration: Configuration
    /// Logs each load at debug level; `nil`, the default, is silent.
    let logger: Logger?

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
        let retryPolicy = configuration.retryPolicies[operationID]
        // A body that neither a retry nor a decorator's replay can send again need not be kept:
        // past the threshold it streams.
        let retries =
            (retryPolicy ?? coordinator.configuration.retryPolicy).mayRetry(request)
            || coordinator.configuration.replaysLoads
        let spool = try await RequestSpool.make(
            from: body, threshold: configuration.requestBodySpoolThreshold,
            limit: configuration.maximumRequestBodySize, directory: configuration.requestBodySpoolDirectory,
            streams: !retries)
        // Once the head is back no attempt can need the file again: a streamed body is never
        // retried, and an upload still in flight reads the file through its open descriptor.
        defer { spool.remove() }
        let cachePolicy = configuration.cachePolicy(for: operationID)
        if configuration.streamsResponse(of: request, operationID: operationID) {
            let streamed = try await coordinator.stream(
                operation: operationID, request: target, body: spool.body, retryPolicy: retryPolicy, logger: logger)
            return (streamed.response, request.method == .head ? nil : StreamedChunks.body(streamed))
        }
        let loaded = try await coordinator.load(
            operation: operationID, request: target, body: spool.body, cachePolicy: cachePolicy,
            retryPolicy: retryPolicy, logger: logger)
        let responseBody = request.method == .head ? nil : DataChunks.body(loaded.value)
        return (loaded.response, responseBody)
    }
}
