public import FoundationEssentials

extension Resource where Response: Decodable {
    /// `Data` is the body itself; `String` is the body as UTF-8 text; any other `Decodable`
    /// is decoded from JSON, below ``decodingKeyPath``.
    public func decode(_ body: Data, response: HTTPResponse) throws -> Response {
        if Response.self == Data.self, let data = body as? Response { return data }
        if Response.self == String.self, let text = String(decoding: body, as: UTF8.self) as? Response {
            return text
        }
        return try jsonDecoder.decode(Response.self, from: body, atKeyPath: decodingKeyPath)
    }
}

/// A decoder for JSON response bodies: `CourierJSONDecoder` (the default) or Foundation's
/// `JSONDecoder`, or your own.
///
/// ```swift
/// struct LegacyOrders: Resource {
///     typealias Response = [Order]
///     var endpoint: Endpoint { Endpoint("https://shop.example.com", path: "/orders") }
///     var jsonDecoder: any JSONBodyDecoder { JSONDecoder() }   // Foundation's instead
/// }
/// ```
public protocol JSONBodyDecoder: Sendable {
    /// Decodes `type` from the value at `keyPath` (object keys; empty for the whole document).
    func decode<T: Decodable>(_ type: T.Type, from body: Data, atKeyPath keyPath: [String]) throws -> T
}

extension CourierJSONDecoder: JSONBodyDecoder {}

extension JSONDecoder: JSONBodyDecoder {
    public func decode<T: Decodable>(_ type: T.Type, from body: Data, atKeyPath keyPath: [String]) throws -> T {
        guard !keyPath.isEmpty else { return try decode(T.self, from: body) }
        return try DecodingKeyPath.decode(T.self, at: keyPath) { try decode($0, from: body) }
    }
}

/// Describing decoding failures.
enum JSONDecoding {
    /// `"data.items[3].name"` for a coding path.
    static func describe(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text.isEmpty ? "<root>" : text
    }

    /// A `decodingFailed` error naming the coding path.
    static func failure(_ error: any Error, response: TransportResponse) -> ServiceError {
        if let error = error as? ServiceError { return error }
        return ServiceError(
            .decodingFailed,
            "The response could not be decoded: \(detail(of: error)).\(undecodedCodings(of: response.head))",
            response: response.head, bodyExcerpt: ServiceError.excerpt(of: response), underlying: error)
    }

    /// A note when the body is still in a coding Courier did not undo (one it does not know,
    /// handed on as it came, or any with `decompressesResponses` off): it explains the failure.
    static func undecodedCodings(of head: HTTPResponse) -> String {
        func applied(_ name: HTTPField.Name, besides plain: Set<String>) -> String? {
            let codings = Codings.listed(in: head.headerFields, name, ignoring: plain)
            return codings.isEmpty ? nil : "\(name): \(codings.joined(separator: ", ").prefix(64))"
        }
        let codings = [
            applied(.contentEncoding, besides: ["identity"]),
            applied(.transferEncoding, besides: ["identity", "chunked"]),
        ].compactMap { $0 }
        return codings.isEmpty ? "" : " The body is still encoded (\(codings.joined(separator: ", ")))."
    }

    /// What went wrong where, for a `DecodingError`; the error's description otherwise.
    static func detail(of error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            "missing key '\(key.stringValue)' at \(describe(context.codingPath))"
        case .typeMismatch(let type, let context)?:
            "expected \(type) at \(describe(context.codingPath)): \(context.debugDescription)"
        case .valueNotFound(let type, let context)?:
            "null where \(type) was expected at \(describe(context.codingPath))"
        case .dataCorrupted(let context)?:
            "invalid data at \(describe(context.codingPath)): \(context.debugDescription)"
        default:
            String(describing: error)
        }
    }
}
