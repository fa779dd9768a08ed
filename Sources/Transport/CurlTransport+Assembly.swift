internal import CourierCore
internal import HTTPTypes

/// The synchronous steps around a transfer's `await`s. A value an async function builds lives
/// in the task's frame for as long as the function waits, here for the whole transfer; built in
/// these functions (never inlined into the async ones), it lives on the thread's stack for a moment.
extension CurlTransport {
    /// The transfer for one hop, its request prepared for curl.
    @inline(never)
    func makeTransfer(_ hop: RedirectHop, options: TransferOptions) -> Transfer {
        Transfer(
            request: PreparedRequest(hop.request, body: hop.body, options: options), bodyBuffers: bodyBuffers,
            streamBufferSize: configuration.streamBufferSize)
    }

    /// The response `send` returns for the last hop: its redirects counted, its body inflated
    /// unless `options` say otherwise.
    @inline(never)
    static func response(of hop: HopResult, redirects: Int, options: TransferOptions) throws -> TransportResponse {
        var response = TransportResponse(head: hop.head, body: hop.body, metrics: hop.metrics)
        response.trailers = hop.trailers
        response.metrics.redirectCount = redirects
        if options.decompressesResponses && hop.mayBeEncoded {
            let codings = try ContentCodings(headers: hop.head.headerFields)
            if !codings.isIdentity {
                response.body = try codings.decode(hop.body, limit: options.maximumBodySize)
                response.head.headerFields[.contentEncoding] = nil
                response.head.headerFields[.contentLength] = nil
                response.metrics.decodedContentEncoding = codings.fieldValue
            }
        }
        return response
    }
}
