internal import Foundation

/// The parts of HAR 1.2 (the HTTP Archive format browsers' developer tools and proxies read and
/// write) that Courier records and replays. See http://www.softwareishard.com/blog/har-12-spec/.
package enum HAR {
    /// The top level: `{"log": {...}}`.
    package struct Document: Codable, Sendable {
        package var log: Log
        package init(log: Log) { self.log = log }
    }

    package struct Log: Codable, Sendable {
        package var version = "1.2"
        package var creator = Creator(name: "Courier", version: "1")
        package var entries: [Entry] = []
        package init(entries: [Entry] = []) { self.entries = entries }
    }

    package struct Creator: Codable, Sendable {
        package var name: String
        package var version: String
    }

    package struct Entry: Codable, Sendable {
        /// ISO 8601 with fractional seconds.
        package var startedDateTime: String
        /// Milliseconds.
        package var time: Double
        package var request: Request
        package var response: Response
        package var cache = Cache()
        package var timings: Timings
        /// Courier's extension: the error code of a transfer that failed (`status` is then 0).
        package var _courierError: String?
    }

    package struct Request: Codable, Sendable {
        package var method: String
        package var url: String
        package var httpVersion: String
        package var cookies: [Cookie] = []
        package var headers: [NameValue]
        package var queryString: [NameValue]
        package var postData: PostData?
        package var headersSize = -1
        package var bodySize: Int
    }

    package struct Response: Codable, Sendable {
        package var status: Int
        package var statusText: String
        package var httpVersion: String
        package var cookies: [Cookie] = []
        package var headers: [NameValue]
        package var content: Content
        package var redirectURL = ""
        package var headersSize = -1
        package var bodySize: Int
    }

    package struct NameValue: Codable, Sendable, Equatable {
        package var name: String
        package var value: String
    }

    package struct Cookie: Codable, Sendable {
        package var name: String
        package var value: String
    }

    package struct PostData: Codable, Sendable {
        package var mimeType: String
        package var text: String
        /// Courier's extension: `base64` when `text` holds base64 of a binary body.
        package var _encoding: String?
    }

    package struct Content: Codable, Sendable {
        package var size: Int
        package var mimeType: String
        package var text: String?
        /// `base64` when `text` is base64 of a binary body.
        package var encoding: String?
    }

    package struct Cache: Codable, Sendable {}

    package struct Timings: Codable, Sendable {
        package var send: Double
        package var wait: Double
        package var receive: Double
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
