public import FoundationEssentials
public import HTTPTypes

/// A request body produced while it is sent: the chunks of an `AsyncSequence`, read once.
///
/// The transport pulls the chunks through ``RequestBody/StreamedBody/take()`` the first time it
/// sends the body; a second send (a retry, a redirect that keeps the body) finds nothing to take
/// and fails with ``ServiceError/Code/bodyNotReplayable`` instead of sending a different body.
extension RequestBody {
    /// Where a streamed body's chunks go: the transport's buffer, which suspends the producer
    /// while it holds enough bytes (the backpressure that bounds the memory of any size).
    package protocol ChunkSink: Sendable {
        /// Hands one chunk over; suspends while the transport's buffer is full. Throws when the
        /// transfer ended (failed, cancelled, or the server answered without reading it all).
        func send(_ chunk: Data) async throws
    }

    /// The chunks of a streamed body and the length it declares, taken once.
    package final class StreamedBody: Sendable {
        /// Writes every chunk into the sink, in order, then returns the trailer fields (empty
        /// when there are none); throws what the sequence or the trailers' closure throws.
        package typealias Pump = @Sendable (any ChunkSink) async throws -> HTTPFields

        /// The length the caller declared (sent as `Content-Length`), or `nil` for a body of
        /// unknown length (chunked on HTTP/1.1, DATA frames until the end on HTTP/2).
        package let length: Int?
        /// Whether the body ends with trailer fields (sent chunked, over HTTP/1.1).
        package let hasTrailers: Bool
        private let pump: LockedValue<Pump?>

        package init(length: Int?, hasTrailers: Bool = false, pump: @escaping Pump) {
            self.length = length
            self.hasTrailers = hasTrailers
            self.pump = LockedValue(pump)
        }

        /// `trailers` if none of them is a field a trailer section must not carry; otherwise
        /// `invalidRequest`, thrown before any trailer is sent.
        static func checkTrailers(_ trailers: HTTPFields) throws -> HTTPFields {
            for field in trailers where RequestBody.forbiddenTrailerNames.contains(field.name) {
                throw ServiceError(
                    .invalidRequest,
                    "The request trailer field \(field.name.rawName) is not allowed in a trailer section (RFC 9110 §6.5.1)."
                )
            }
            return trailers
        }

        /// The chunks, the first time; `nil` after that.
        package func take() -> Pump? {
            pump.withLock { pump in
                defer { pump = nil }
                return pump
            }
        }
    }

    /// Fields a trailer section must not carry (RFC 9110 §6.5.1): framing, routing, request
    /// modifiers, authentication and content metadata, which a recipient reads from the head.
    static let forbiddenTrailerNames: Set<HTTPField.Name> = [
        .contentLength, .transferEncoding, HTTPField.Name("Host")!, .te, .connection, .upgrade, .expect, .range,
        .ifRange,
        .ifMatch, .ifNoneMatch, .ifModifiedSince, .ifUnmodifiedSince, .cacheControl, .maxForwards,
        HTTPField.Name("Pragma")!,
        .authorization, .proxyAuthorization, .cookie, .contentEncoding, .contentType, .contentRange,
        HTTPField.Name("Trailer")!, HTTPField.Name("Keep-Alive")!,
    ]

    /// A body whose bytes are the chunks of `chunks`, read as the request is sent, with
    /// backpressure: the sequence is asked for its next chunk only when the transport's buffer
    /// has room, so a body of any size is sent in bounded memory.
    ///
    /// With `length`, the body goes out with that `Content-Length`, and a sequence that ends
    /// with more or fewer bytes fails the request with `requestBodyFailed`. Without it, the body
    /// goes out chunked on HTTP/1.1 (as DATA frames until the end on HTTP/2).
    ///
    /// `trailers`, when given, is called once the sequence has ended, and its fields go out
    /// after the last chunk (a digest of what was sent, say). A field a trailer section must not
    /// carry (`Content-Length`, `Host`, `Authorization`, `Content-Type`, … RFC 9110 §6.5.1)
    /// fails the request with `invalidRequest`. Trailers need the chunked framing
    /// of HTTP/1.1, so a body with trailers has no `length` and its request goes out over
    /// HTTP/1.1 (curl sends no request trailers on HTTP/2); a `length` with trailers fails the
    /// request with `invalidRequest`.
    ///
    /// The sequence is read once: a request with a streamed body is not retried, and a redirect
    /// that must resend the body (307, 308) fails with `bodyNotReplayable`. An error the sequence
    /// throws fails the request with `requestBodyFailed`, the sequence's error as its underlying
    /// error.
    ///
    /// ```swift
    /// let lines = AsyncStream<Data> { continuation in
    ///     for number in 1...3 { continuation.yield(Data("line \(number)\n".utf8)) }
    ///     continuation.finish()
    /// }
    /// let body = RequestBody.stream(lines, contentType: "text/plain")
    /// ```
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int? = nil, contentType: String? = nil,
        trailers: (@Sendable () async throws -> HTTPFields)? = nil
    ) -> RequestBody where Chunks.Element == Data {
        let body = StreamedBody(length: length.map { max($0, 0) }, hasTrailers: trailers != nil) { sink in
            for try await chunk in chunks where !chunk.isEmpty {
                try await sink.send(chunk)
            }
            guard let trailers else { return HTTPFields() }
            return try StreamedBody.checkTrailers(try await trailers())
        }
        return RequestBody(storage: .stream(body), contentType: contentType)
    }

    /// Whether the body can be sent more than once (for a retry or a redirect): every body but
    /// a stream's.
    public var isReplayable: Bool {
        if case .stream = storage { false } else { true }
    }
}
