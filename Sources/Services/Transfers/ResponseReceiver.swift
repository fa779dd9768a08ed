internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// How a load receives a response it does not hold in memory whole: a download writes the body
/// to a file, a streamed load hands it to its reader. It replaces the transport's `send` in one
/// attempt of the pipeline, so decorators, retries, events and tracing still wrap it.
protocol ResponseReceiver: Sendable {
    /// Sends `request` once with `send` and receives the response. The returned response's
    /// body is empty when this receiver kept the body; for a status the load does not accept
    /// (a 401 a decorator replays, a 503 the retry policy repeats) it holds an excerpt, so
    /// decorators, retries and errors see it as they see any load's.
    func receive(
        _ request: HTTPRequest, send: (HTTPRequest) async throws -> StreamingTransportResponse
    ) async throws -> TransportResponse

    /// Whether a body cut short may be sent again: the receiver resumes or restarts it safely.
    var resumesCutBodies: Bool { get }
}

extension ResponseReceiver {
    /// At most `limit` bytes of a body the load will not use (for an error's excerpt); the rest
    /// is not read, which stops the transfer.
    static func excerpt(of body: TransportBody, limit: Int = 64 << 10) async throws -> Data {
        var data = Data()
        for try await chunk in body {
            data.append(chunk.prefix(limit - data.count))
            if data.count >= limit { break }
        }
        return data
    }
}
