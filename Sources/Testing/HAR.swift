internal import Foundation

/// The parts of HAR 1.2 (the HTTP Archive format browsers' developer tools and proxies read and
/// write) that Courier records and replays. See http://www.softwareishard.com/blog/har-12-spec/.
public enum HAR {
    /// The top level: `{"log": {...}}`.
    public struct Document: Codable, Sendable {
        public var log: Log
        public init(log: Log) { self.log = log }
    }

    public struct Log: Codable, Sendable {
        public var version = "1.2"
        public var creator = Creator(name: "Courier", version: "1")
        public var entries: [Entry] = []
        public init(entries: [Entry] = []) { self.entries = entries }
    }

    public struct Creator: Codable, Sendable {
        public var name: String
        public var version: String
    }

    public struct Entry: Codable, Sendable {
        /// ISO 8601 with fractional seconds.
        public var startedDateTime: String
        /// Milliseconds.
        public var time: Double
        public var request: Request
        public var response: Response
        public var cache = Cache()
        public var timings: Timings
        /// Courier's extension: the error code of a transfer that failed (`status` is then 0).
        public var _courierError: String?
    }

    public struct Request: Codable, Sendable {
        public var method: String
        public var url: String
        public var httpVersion: String
        public var cookies: [Cookie] = []
        public var headers: [NameValue]
        public var queryString: [NameValue]
        public var postData: PostData?
        public var headersSize = -1
        public var bodySize: Int
    }

    public struct Response: Codable, Sendable {
        public var status: Int
        public var statusText: String
        public var httpVersion: String
        public var cookies: [Cookie] = []
        public var headers: [NameValue]
        public var content: Content
        public var redirectURL = ""
        public var headersSize = -1
        public var bodySize: Int
    }

    public struct NameValue: Codable, Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public struct Cookie: Codable, Sendable {
        public var name: String
        public var value: String
    }

    public struct PostData: Codable, Sendable {
        public var mimeType: String
        public var text: String
        /// Courier's extension: `base64` when `text` holds base64 of a binary body.
        public var _encoding: String?
    }

    public struct Content: Codable, Sendable {
        public var size: Int
        public var mimeType: String
        public var text: String?
        /// `base64` when `text` is base64 of a binary body.
        public var encoding: String?
    }

    public struct Cache: Codable, Sendable {}

    public struct Timings: Codable, Sendable {
        public var send: Double
        public var wait: Double
        public var receive: Double
    }

    /// A body as HAR text: UTF-8 when it is, else base64.
    static func text(of data: Data) -> (text: String, base64: Bool) {
        if let text = String(validating: data, as: UTF8.self) { return (text, false) }
        return (data.base64EncodedString(), true)
    }

    static func data(text: String?, base64: Bool) -> Data {
        guard let text else { return Data() }
        return base64 ? (Data(base64Encoded: text) ?? Data()) : Data(text.utf8)
    }
}
