public import Foundation

/// What `/echo` answers: the request as the server received it.
public struct Echo: Codable, Sendable {
    public var method: String
    public var uri: String
    public var headers: [[String]]
    public var bodyLength: Int
    public var bodyCRC: UInt32
    /// The body as text, when it is at most 64 KiB.
    public var body: String?

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0[0].lowercased() == name.lowercased() }?[1]
    }

    /// Decodes an `/echo` response body.
    public init(_ data: Data) throws { self = try JSONDecoder().decode(Echo.self, from: data) }

    init(method: String, uri: String, headers: [[String]], bodyLength: Int, bodyCRC: UInt32, body: String?) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.bodyLength = bodyLength
        self.bodyCRC = bodyCRC
        self.body = body
    }
}
