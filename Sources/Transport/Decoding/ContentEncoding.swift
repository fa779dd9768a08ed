internal import HTTPTypes

/// The encodings Courier asks for and decodes itself.
enum ContentEncoding: Sendable, Equatable {
    case identity
    case gzip
    case deflate

    /// The `Accept-Encoding` value Courier sends.
    static let acceptHeader = "gzip, deflate"

    /// Reads `Content-Encoding`; anything but one of ours is `unsupportedEncoding`.
    init(headers: HTTPFields) throws(ServiceError) {
        let values = headers[values: .contentEncoding]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingASCIIWhitespace().lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch values {
        case []: self = .identity
        case ["gzip"], ["x-gzip"]: self = .gzip
        case ["deflate"]: self = .deflate
        default:
            throw ServiceError(
                .unsupportedEncoding,
                "The server answered with Content-Encoding '\(values.joined(separator: ", ").prefix(64))', which was not requested.")
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
