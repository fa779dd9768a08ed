public import HTTPTypes

extension CurlTransport {
    /// ``stream(_:body:options:)`` through the transport seam: the body is inflated as it
    /// arrives, buffered up to ``Configuration/streamBufferSize`` (the transfer pauses while the
    /// reader lags), and the transfer stops when the reader stops.
    public func sendStreaming(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> StreamingTransportResponse
    {
        let streamed = try await stream(request, body: body, options: options)
        var metrics = TransferMetrics()
        metrics.redirectCount = streamed.redirectCount
        let channel = streamed.body.channel
        return StreamingTransportResponse(
            head: streamed.head, metrics: metrics, body: TransportBody(streamed.body, onCancel: { channel.close() }))
    }
}
