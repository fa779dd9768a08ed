public import CourierServices
public import FoundationEssentials
public import XMLCoder

/// A resource whose response is XML, decoded into `Decodable` models with XMLCoder.
///
/// ```swift
/// struct Headlines: XMLResource {
///     typealias Response = [FeedItem]
///     var endpoint: Endpoint { Endpoint("https://example.com", path: "/feed.xml") }
///     var decodingKeyPath: [String] { ["channel", "item"] }    // <rss><channel><item>...
/// }
/// ```
///
/// The root element is the document itself (as XMLCoder decodes it);
/// `Resource.decodingKeyPath` names the child elements leading to the part to decode (the
/// same mechanism as JSON's), and repeated elements decode as arrays.
/// Failures are `decodingFailed` errors naming the coding path, like JSON's.
public protocol XMLResource: Resource where Response: Decodable {
    /// Superseded by `Resource.decodingKeyPath`, the key path JSON and XML share; used only
    /// when that one is empty, so conformances written before it keep working (default: none).
    var xmlKeyPath: [String] { get }
    /// The decoder (default: a plain `XMLDecoder`). Build a new one here rather than sharing a
    /// mutable instance between tasks.
    var xmlDecoder: XMLDecoder { get }
}

extension XMLResource {
    public var xmlKeyPath: [String] { [] }
    public var xmlDecoder: XMLDecoder { XMLDecoder() }

    /// Decodes the body as XML, below `Resource.decodingKeyPath`.
    public func decode(_ body: Data, response: HTTPResponse) throws -> Response {
        let decoder = xmlDecoder
        let path = decodingKeyPath.isEmpty ? xmlKeyPath : decodingKeyPath
        guard !path.isEmpty else { return try decoder.decode(Response.self, from: body) }
        return try DecodingKeyPath.decode(Response.self, at: path) { try decoder.decode($0, from: body) }
    }
}
