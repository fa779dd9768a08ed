public import FoundationEssentials
public import HTTPTypes

/// The one seam between Courier and the network: a request (with an optional body and
/// per-transfer options) in, a response head, body and metrics out.
///
/// `CurlTransport` is the real implementation; `CourierTesting` provides doubles.
/// Implementations throw ``ServiceError`` only.
public protocol HTTPTransport: Sendable {
    /// Sends one request and returns the complete, decoded response.
    func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse

    /// Sends one request and returns once the response head arrived; the body follows as a
    /// ``TransportBody``. Downloads and streamed loads of `RequestCoordinator` use it, so a
    /// transport that streams keeps their memory bounded whatever the body's size. The default
    /// calls ``send(_:body:options:)`` and delivers the whole body as one chunk.
    func stream(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> StreamingTransportResponse

    /// The executor on which this transport completes its transfers, when it offers one.
    /// A task that prefers it (`withTaskExecutorPreference(transport.taskExecutor) { … }`)
    /// resumes on the thread that completed its transfer, without waiting for another thread
    /// to wake. `nil` (the default) for transports without such a thread.
    var taskExecutor: (any TaskExecutor)? { get }
}

extension HTTPTransport {
    /// No executor of its own.
    public var taskExecutor: (any TaskExecutor)? { nil }

    /// Sends one request with default options.
    public func send(_ request: HTTPRequest, body: RequestBody? = nil) async throws -> TransportResponse {
        try await send(request, body: body, options: TransferOptions())
    }
}

/// A complete response: head, body (already inflated when it was compressed) and metrics.
public struct TransportResponse: Sendable {
    /// The status and header fields. When Courier inflated the body, `Content-Encoding` and
    /// `Content-Length` are removed, so the head describes the body you hold.
    public var head: HTTPResponse
    /// The body bytes.
    public var body: Data
    /// Timings and sizes reported by the transport.
    public var metrics: TransferMetrics
    /// The trailer fields that followed the body (HTTP/1.1 chunked, or HTTP/2), empty when
    /// there were none. Kept apart from ``head``: a trailer never changes a header field.
    public var trailers = HTTPFields()

    /// Creates a response (for transports and test doubles).
    public init(head: HTTPResponse, body: Data = Data(), metrics: TransferMetrics = TransferMetrics()) {
        self.head = head
        self.body = body
        self.metrics = metrics
    }
}
