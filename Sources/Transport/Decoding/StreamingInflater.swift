public import FoundationEssentials

/// Courier's streaming gzip/deflate decoder, the one `CurlTransport` runs on response bodies,
/// exposed to courier-bench, which measures it against zlib, as SPI (`@_spi(Benchmarks)`): it is
/// not part of the supported API.
///
/// ```swift
/// let inflater = StreamingInflater(format: .gzip)
/// var output = Data()
/// for chunk in chunks { try inflater.inflate(chunk, into: &output) }
/// try inflater.finish()   // a stream that stopped early is decompressionFailed
/// ```
@_spi(Benchmarks) public final class StreamingInflater {
    /// The compressed format.
    public enum Format: Sendable {
        /// gzip (RFC 1952).
        case gzip
        /// zlib-wrapped deflate, or raw deflate (told apart by the first bytes).
        case deflate
    }

    private let inflater: Inflater

    /// A decoder for one stream; `limit` caps the inflated size (`responseTooLarge`).
    public init(format: Format, limit: Int? = nil) {
        inflater = Inflater(encoding: format == .gzip ? .gzip : .deflate)
        self.limit = limit
    }

    private let limit: Int?

    /// Inflates the next piece of the stream, appending what it yields to `output`.
    public func inflate(_ chunk: Data, into output: inout Data) throws(ServiceError) {
        var failure: ServiceError?
        chunk.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            do {
                try inflater.inflate(input, limit: limit) { (piece: UnsafeRawBufferPointer) throws(ServiceError) in
                    output.append(contentsOf: piece)
                }
            } catch {
                failure = error as? ServiceError ?? ServiceError(.decompressionFailed, "\(error)")
            }
        }
        if let failure { throw failure }
    }

    /// Checks that the stream ended; throws `decompressionFailed` if it was cut short.
    public func finish() throws(ServiceError) { try inflater.finish() }

    /// Bytes produced so far.
    public var totalOut: Int { inflater.totalOut }
}
