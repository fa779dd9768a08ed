internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// Streamed request bodies, read as a transport sends them.
extension MockTransport {
    /// Reads a streamed body whole, as a transport sends it: its bytes and trailers. A stream
    /// already sent once is `bodyNotReplayable`, as from `CurlTransport`; an error its sequence
    /// throws is `requestBodyFailed`.
    static func drain(_ streamed: RequestBody.StreamedBody) async throws -> (Data, HTTPFields) {
        guard let pump = streamed.take() else {
            throw ServiceError(
                .bodyNotReplayable, "MockTransport received a streamed body a second time, but a stream is read once.")
        }
        let sink = CollectingSink()
        let trailers: HTTPFields
        do {
            trailers = try await pump(sink)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(
                .requestBodyFailed, "The streamed request body's sequence threw: \(error)", underlying: error)
        }
        // A cancelled task ends an `AsyncStream` early, as if it were whole: not a body.
        if Task.isCancelled { throw ServiceError.cancelled() }
        let data = sink.data.withLock { $0 }
        if let length = streamed.length, length != data.count {
            throw ServiceError(
                .requestBodyFailed, "The streamed request body declared \(length) bytes but produced \(data.count).")
        }
        return (data, trailers)
    }

    /// Collects a streamed body's chunks.
    private final class CollectingSink: RequestBody.ChunkSink {
        let data = LockedValue(Data())
        func send(_ chunk: Data) async throws { data.withLock { $0.append(chunk) } }
    }
}
