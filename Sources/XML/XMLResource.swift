public import CourierServices
public import FoundationEssentials
public import XMLCoder

/// A resource whose response is XML, decoded into `Decodable` models with XMLCoder.
///
/// ```swift
/// struct Headlines: XMLResource {
///     typealias Response = [FeedItem]
///     var endpoint: Endpoint { Endpoint("https://example.com", path: "/feed.xml") }
///     var xmlKeyPath: [String] { ["channel", "item"] }    // <rss><channel><item>...
/// }
/// ```
///
/// The root element is the document itself (as XMLCoder decodes it); ``xmlKeyPath`` names the
/// child elements leading to the part to decode, and repeated elements decode as arrays.
/// Failures are `decodingFailed` errors naming the coding path, like JSON's.
public protocol XMLResource: Resource where Response: Decodable {
    /// Element names from the root to the part to decode (default: the whole document).
    var xmlKeyPath: [String] { get }
    /// The decoder (default: a plain `XMLDecoder`). Build a new one here rather than sharing a
    /// mutable instance between tasks.
    var xmlDecoder: XMLDecoder { get }
}

extension XMLResource {
    public var xmlKeyPath: [String] { [] }
    public var xmlDecoder: XMLDecoder { XMLDecoder() }

    /// Decodes the body as XML, below ``xmlKeyPath``.
    public func decode(_ body: Data, response: HTTPResponse) throws -> Response {
        let decoder = xmlDecoder
        let path = xmlKeyPath
        guard !path.isEmpty else { return try decoder.decode(Response.self, from: body) }
        return try XMLKeyPath.$current.withValue(path) {
            try decoder.decode(XMLKeyPath.Payload<Response>.self, from: body).value
        }
    }
}

/// Key-path selection for XML: the path travels in a task-local, so a decoder the resource
/// shares is never mutated.
enum XMLKeyPath {
    @TaskLocal static var current: [String] = []

    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    struct Payload<T: Decodable>: Decodable {
        let value: T

        init(from decoder: any Decoder) throws {
            let path = XMLKeyPath.current
            var container = try decoder.container(keyedBy: Key.self)
            for key in path.dropLast() {
                container = try container.nestedContainer(keyedBy: Key.self, forKey: Key(stringValue: key))
            }
            value = try container.decode(T.self, forKey: Key(stringValue: path.last ?? ""))
        }
    }
}
