public import FoundationEssentials

/// Courier's streaming content decoders (gzip, deflate, brotli, zstd), the ones `CurlTransport`
/// runs on response bodies, exposed to courier-bench, which measures each against its
/// library's one-shot decoder, as SPI (`@_spi(Benchmarks)`): not part of the supported API.
///
/// ```swift
/// let decoder = StreamingDecoder(format: .gzip)
/// var output = Data()
/// for chunk in chunks { try decoder.decode(chunk, into: &output) }
/// try decoder.finish()   // a stream that stopped early is decompressionFailed
/// ```
@_spi(Benchmarks) public final class StreamingDecoder {
    /// The compressed format.
    public enum Format: Sendable {
        /// gzip (RFC 1952).
        case gzip
        /// zlib-wrapped deflate, or raw deflate (told apart by the first bytes).
        case deflate
        /// brotli (RFC 7932).
        case brotli
        /// Zstandard (RFC 8878).
        case zstd
    }

    private let decoder: any ContentDecoder
    private let limit: Int?

    /// A decoder for one stream; `limit` caps the decoded size (`responseTooLarge`).
    public init(format: Format, limit: Int? = nil) {
        let encoding: ContentEncoding =
            switch format {
            case .gzip: .gzip
            case .deflate: .deflate
            case .brotli: .brotli
            case .zstd: .zstd
            }
        decoder = encoding.makeDecoder()
        self.limit = limit
    }

    /// Decodes the next piece of the stream, appending what it yields to `output`.
    public func decode(_ chunk: Data, into output: inout Data) throws(ServiceError) {
        var failure: ServiceError?
        chunk.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            do {
                try decoder.decode(input, limit: limit) { (piece: UnsafeRawBufferPointer) throws(ServiceError) in
                    output.append(contentsOf: piece)
                }
            } catch {
                failure = error as? ServiceError ?? ServiceError(.decompressionFailed, "\(error)")
            }
        }
        if let failure { throw failure }
    }

    /// Checks that the stream ended; throws `decompressionFailed` if it was cut short.
    public func finish() throws(ServiceError) { try decoder.finish() }

    /// Bytes produced so far.
    public var totalOut: Int { decoder.totalOut }

    /// Decodes a whole body held in memory, the way `load()` does: into one buffer sized from
    /// what the body declares, when it declares its size.
    public static func decodeWhole(_ body: Data, format: Format, limit: Int? = nil) throws(ServiceError) -> Data {
        let decoder = StreamingDecoder(format: format, limit: limit).decoder
        var result: Result<Data, ServiceError> = .success(Data())
        body.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            do throws(ServiceError) {
                result = .success(try decoder.decodeAll(input, limit: limit))
            } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }
}
