public import FoundationEssentials
public import HTTPTypes

/// A response body that is still arriving: an `AsyncSequence` of chunks, in order.
///
/// Iterate it once. Leaving the loop early, or dropping the iterator, stops the transfer when
/// the transport streams (`CurlTransport` does); a body already in memory is one chunk.
public struct TransportBody: AsyncSequence, Sendable {
    public typealias Element = Data

    private let iterate: @Sendable () -> Iterator
    private let onCancel: (@Sendable () -> Void)?
    private let readTrailers: (@Sendable () -> HTTPFields?)?

    /// A body read from `chunks` (a transport's own stream). `onCancel` stops the transfer
    /// from any task, failing a read in progress; ``cancel()`` calls it.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, onCancel: (@Sendable () -> Void)? = nil)
    where Chunks.Element == Data {
        self.init(chunks, onCancel: onCancel, readTrailers: nil)
    }

    /// A body read from `chunks` whose transport reports the response's trailer fields:
    /// `trailers` returns them once the body has ended, `nil` before.
    public init<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, onCancel: (@Sendable () -> Void)? = nil, trailers: @escaping @Sendable () -> HTTPFields?
    ) where Chunks.Element == Data {
        self.init(chunks, onCancel: onCancel, readTrailers: trailers)
    }

    private init<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, onCancel: (@Sendable () -> Void)?, readTrailers: (@Sendable () -> HTTPFields?)?
    ) where Chunks.Element == Data {
        iterate = {
            var iterator = chunks.makeAsyncIterator()
            return Iterator { try await iterator.next() }
        }
        self.onCancel = onCancel
        self.readTrailers = readTrailers
    }

    /// A body already in memory, delivered as one chunk (none when it is empty).
    public static func bytes(_ data: Data) -> TransportBody {
        bytes(data, trailers: HTTPFields())
    }

    /// A body already in memory, delivered as one chunk, and the trailer fields that followed it.
    /// As with a streamed body, ``trailers`` shows them once the body has been read to its end.
    public static func bytes(_ data: Data, trailers: HTTPFields) -> TransportBody {
        let chunk = BytesChunk(data: data)
        return TransportBody(
            chunk, onCancel: nil,
            readTrailers: { [ended = chunk.ended] in
                ended.withLock { $0 } ? trailers : nil
            })
    }

    /// The trailer fields that followed the body (empty when there were none), once the body
    /// has ended: read them after the loop over the chunks. `nil` while the body is still
    /// arriving, after it failed, or when its transport does not report trailers.
    ///
    /// ```swift
    /// let response = try await transport.stream(request)
    /// for try await chunk in response.body { consume(chunk) }
    /// let checksum = response.body.trailers?[HTTPField.Name("Checksum")!]
    /// ```
    public var trailers: HTTPFields? { readTrailers?() }

    public func makeAsyncIterator() -> Iterator { iterate() }

    /// Reads the chunks one by one. Not `Sendable`: one task reads a body.
    public struct Iterator: AsyncIteratorProtocol {
        private let read: () async throws -> Data?

        init(_ read: @escaping () async throws -> Data?) { self.read = read }

        public mutating func next() async throws -> Data? { try await read() }
    }

    /// Collects the whole body, failing with `responseTooLarge` past `limit` bytes.
    public func collect(upTo limit: Int = .max) async throws -> Data {
        try await collectChunks(upTo: limit)
    }

    /// Stops the transfer without reading (a body nobody will read must still let go of it).
    package func discard() {
        onCancel?()
        _ = makeAsyncIterator()
    }

    /// Stops the transfer from any task, also while another task reads: that read, or the next,
    /// fails with `cancelled`. A body already in memory has nothing to stop.
    public func cancel() {
        onCancel?()
    }
}

/// Bytes in memory as a sequence of at most one chunk, which records when an iterator read
/// its end (so that its trailers show only then, as a transport's do).
private struct BytesChunk: AsyncSequence, Sendable {
    typealias Element = Data
    let data: Data
    let ended = LockedValue(false)

    func makeAsyncIterator() -> Iterator { Iterator(data: data.isEmpty ? nil : data, ended: ended) }

    struct Iterator: AsyncIteratorProtocol {
        var data: Data?
        let ended: LockedValue<Bool>

        mutating func next() async throws -> Data? {
            guard let chunk = data else {
                ended.withLock { $0 = true }
                return nil
            }
            data = nil
            return chunk
        }
    }
}

extension AsyncSequence where Element == Data {
    /// The chunks joined, failing with `responseTooLarge` past `limit` bytes: what every body
    /// stream's `collect(upTo:)` does.
    package func collectChunks(upTo limit: Int) async throws -> Data {
        var data = Data()
        for try await chunk in self {
            guard data.count + chunk.count <= limit else {
                throw ServiceError(.responseTooLarge, "The streamed body exceeds \(limit) bytes.")
            }
            data.append(chunk)
        }
        return data
    }
}
