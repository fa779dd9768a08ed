internal import FoundationEssentials
internal import HTTPTypes

/// One content coding Courier asks for and decodes itself.
enum ContentEncoding: Sendable, Equatable {
    case identity
    case gzip
    case deflate
    /// Brotli, `br` on the wire.
    case brotli
    case zstd

    /// The `Accept-Encoding` value Courier sends.
    static let acceptHeader = "gzip, deflate, br, zstd"

    /// The coding's name in `Content-Encoding` (`x-gzip` is read as `gzip`).
    var name: String {
        switch self {
        case .identity: "identity"
        case .gzip: "gzip"
        case .deflate: "deflate"
        case .brotli: "br"
        case .zstd: "zstd"
        }
    }
}

/// The codings of a response body, in the order the server applied them (RFC 9110, 8.4:
/// `Content-Encoding: deflate, gzip` was deflated, then gzipped). Decoding undoes them from
/// the last to the first.
struct ContentCodings: Sendable, Equatable {
    /// At most this many codings are decoded (curl's limit too); more is `unsupportedEncoding`.
    static let maximumCount = 5

    /// The codings other than `identity`, in the order applied.
    let applied: [ContentEncoding]

    static let identity = ContentCodings(applied: [])

    private init(applied: [ContentEncoding]) { self.applied = applied }

    /// Reads `Content-Encoding`. A body in a coding other than gzip, deflate, br and zstd is
    /// handed on as it came, its `Content-Encoding` kept (as curl and browsers do: Courier
    /// cannot undo that coding, so it undoes none); more than ``maximumCount`` codings is
    /// `unsupportedEncoding`.
    init(headers: HTTPFields) throws(ServiceError) {
        var applied: [ContentEncoding] = []
        for field in headers[values: .contentEncoding] {
            for element in field.split(separator: ",") {
                let name = element.trimmingASCIIWhitespace().lowercased()
                switch name {
                case "", "identity": continue
                case "gzip", "x-gzip": applied.append(.gzip)
                case "deflate": applied.append(.deflate)
                case "br": applied.append(.brotli)
                case "zstd": applied.append(.zstd)
                default:
                    self = .identity
                    return
                }
            }
        }
        guard applied.count <= Self.maximumCount else {
            throw ServiceError(
                .unsupportedEncoding,
                "The server applied \(applied.count) content codings; at most \(Self.maximumCount) are decoded.")
        }
        self.applied = applied
    }

    var isIdentity: Bool { applied.isEmpty }

    /// The codings as a `Content-Encoding` value, in the order applied ("deflate, gzip"); empty
    /// for identity. What ``TransferMetrics/decodedContentEncoding`` reports.
    var fieldValue: String { applied.map(\.name).joined(separator: ", ") }

    /// Decodes a whole body, one coding at a time, each result bounded by `limit`.
    /// Throws only ``ServiceError``.
    func decode(_ body: Data, limit: Int?) throws -> Data {
        var decoded = body
        for encoding in applied.reversed() {
            let decoder = encoding.makeDecoder()
            decoded = try decoded.withUnsafeBytes { bytes in try decoder.decodeAll(bytes, limit: limit) }
        }
        return decoded
    }

    /// A decoder for a body that arrives in chunks, or `nil` for identity.
    func makeDecoder() -> ChunkDecoder? {
        isIdentity ? nil : ChunkDecoder(layers: applied.reversed().map { $0.makeDecoder() })
    }
}

/// Undoes a stack of codings chunk by chunk: each layer's output feeds the next one.
/// Not `Sendable`: used by one task at a time.
final class ChunkDecoder {
    private let layers: [any ContentDecoder]

    init(layers: [any ContentDecoder]) { self.layers = layers }

    /// Decodes `input`, handing each decoded piece to `output`. Every layer's output counts
    /// against `limit`, so a bomb inside a stack is caught at the layer that expands it.
    func decode(
        _ input: UnsafeRawBufferPointer, limit: Int?, output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        try feed(input, layer: 0, limit: limit, output: output)
    }

    /// Confirms that every layer's stream reached its end.
    func finish() throws(ServiceError) {
        for layer in layers { try layer.finish() }
    }

    private func feed(
        _ input: UnsafeRawBufferPointer, layer: Int, limit: Int?,
        output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        guard layer < layers.count else { return try output(input) }
        try layers[layer].decode(input, limit: limit) { (piece) throws(ServiceError) in
            try feed(piece, layer: layer + 1, limit: limit, output: output)
        }
    }
}

extension Substring {
    func trimmingASCIIWhitespace() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
