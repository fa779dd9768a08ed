internal import FoundationEssentials
internal import HTTPTypes

/// A response body as an `AsyncSequence` of chunks, inflated as they arrive.
///
/// Iterate it once. Leaving the loop early, or cancelling the task, stops the transfer.
/// Errors are `ServiceError`s (`truncatedBody`, `decompressionFailed`, `cancelled`, …).
struct ResponseBodyStream: AsyncSequence, Sendable {
    typealias Element = Data

    let channel: BodyChannel
    let codings: ContentCodings
    let limit: Int?
    let onEnd: @Sendable () -> Void

    /// The most bytes the transport buffered at once for this stream (the backpressure
    /// high-water mark), for diagnostics.
    var bufferedHighWaterMark: Int { channel.bufferedHighWaterMark }
    /// The response's trailer fields once the body was read to its end and decoded whole.
    var trailers: HTTPFields? { channel.trailers }

    func makeAsyncIterator() -> Iterator {
        Iterator(state: IteratorState(channel: channel, codings: codings, limit: limit, onEnd: onEnd))
    }

    /// Reads the chunks one by one.
    struct Iterator: AsyncIteratorProtocol {
        let state: IteratorState

        mutating func next() async throws -> Data? {
            try await state.next()
        }
    }

    /// Collects the whole body (up to `limit` bytes).
    func collect(upTo limit: Int = .max) async throws -> Data {
        try await collectChunks(upTo: limit)
    }
}

extension ResponseBodyStream {
    /// Iterator state in a class so that dropping the iterator stops the transfer.
    /// Not `Sendable`: an iterator is used by one task at a time.
    final class IteratorState {
        private let channel: BodyChannel
        private let decoder: ChunkDecoder?
        private let limit: Int?
        private let onEnd: @Sendable () -> Void
        private var done = false
        private var delivered = 0

        init(channel: BodyChannel, codings: ContentCodings, limit: Int?, onEnd: @escaping @Sendable () -> Void) {
            self.channel = channel
            decoder = codings.makeDecoder()
            self.limit = limit
            self.onEnd = onEnd
        }

        deinit {
            if !done {
                channel.close()
                onEnd()
            }
        }

        func next() async throws -> Data? {
            guard !done else { return nil }
            do {
                while true {
                    guard let chunk = try await channel.next() else {
                        try decoder?.finish()
                        channel.acceptEnd()
                        end()
                        return nil
                    }
                    guard let decoder else {
                        delivered += chunk.count
                        return chunk
                    }
                    var output = Data()
                    try chunk.withUnsafeBytes { bytes in
                        try decoder.decode(bytes, limit: limit) { piece in
                            output.append(piece.baseAddress!.assumingMemoryBound(to: UInt8.self), count: piece.count)
                        }
                    }
                    if !output.isEmpty { return output }
                }
            } catch {
                end()
                channel.close()
                throw ServiceError.wrapping(error)
            }
        }

        private func end() {
            done = true
            onEnd()
        }
    }
}
