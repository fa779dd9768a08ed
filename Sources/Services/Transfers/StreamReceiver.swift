internal import CourierCore
internal import HTTPTypes

/// Receives a streamed load: keeps the body of an accepted response for the reader, unread, so
/// the pipeline (decorators, retries, events) ends at the head and nothing is retried once the
/// reader may have seen a byte.
final class StreamReceiver: ResponseReceiver {
    private let acceptableStatus: Range<Int>
    private let kept = LockedValue<TransportBody?>(nil)

    init(acceptableStatus: Range<Int>) {
        self.acceptableStatus = acceptableStatus
    }

    /// A body cut short belongs to the reader, who has seen part of it: never retried.
    var resumesCutBodies: Bool { false }

    func receive(
        _ request: HTTPRequest, send: (HTTPRequest) async throws -> StreamingTransportResponse
    ) async throws -> TransportResponse {
        let response = try await send(request)
        guard acceptableStatus.contains(response.head.status.code) else {
            return TransportResponse(
                head: response.head, body: try await Self.excerpt(of: response.body), metrics: response.metrics)
        }
        // A decorator may replay even an accepted response: only the last one is read.
        let previous = kept.withLock { kept in
            defer { kept = response.body }
            return kept
        }
        previous?.discard()
        return TransportResponse(head: response.head, metrics: response.metrics)
    }

    /// The accepted response's body, once; nil when there is none (or it was taken).
    func take() -> TransportBody? {
        kept.withLock { kept in
            defer { kept = nil }
            return kept
        }
    }
}
