public import HTTPTypes

/// A response whose head has arrived and whose body is still arriving.
public struct StreamingTransportResponse: Sendable {
    /// The status and header fields. When the transport inflates the body, `Content-Encoding`
    /// and `Content-Length` are removed, so the head describes the bytes the body delivers.
    public var head: HTTPResponse
    /// What is known once the head arrived (redirects followed); sizes and the total time are
    /// not, since the body has not been read.
    public var metrics: TransferMetrics
    /// The body, chunk by chunk.
    public var body: TransportBody

    /// Creates a response (for transports and test doubles).
    public init(head: HTTPResponse, metrics: TransferMetrics = TransferMetrics(), body: TransportBody) {
        self.head = head
        self.metrics = metrics
        self.body = body
    }
}

extension HTTPTransport {
    /// Sends with ``send(_:body:options:)`` and delivers the body it returned as one chunk:
    /// the default for transports that hold whole bodies in memory (test doubles, replay).
    public func stream(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> StreamingTransportResponse
    {
        let response = try await send(request, body: body, options: options)
        return StreamingTransportResponse(
            head: response.head, metrics: response.metrics, body: .bytes(response.body, trailers: response.trailers))
    }

    /// The former name of ``stream(_:body:options:)``. A transport that still implements
    /// `sendStreaming` compiles, but is no longer called: implement `stream` instead.
    @available(*, deprecated, renamed: "stream(_:body:options:)")
    func sendStreaming(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> StreamingTransportResponse
    {
        try await stream(request, body: body, options: options)
    }
}
