internal import CourierCore
public import Foundation
public import HTTPTypes

/// A canned response for a resource: what a `.mock` fixture file holds, or what a
/// ``MockableResource`` returns directly.
///
/// A fixture file is either
/// - the **body** alone, served as a `200` with `Content-Type: application/json` (it must be
///   valid JSON), or
/// - a **whole response**, starting with a status line, then header lines, a blank line and
///   the body (any bytes):
///
/// ```
/// HTTP/1.1 404 Not Found
/// Content-Type: application/problem+json
/// Retry-After: 5
///
/// {"title": "No such user"}
/// ```
public struct MockResponse: Sendable, Equatable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The header fields.
    public var headerFields: HTTPFields
    /// The body.
    public var body: Data

    /// A response with `status`, fields and body.
    public init(status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }

    /// A JSON response.
    public static func json(_ text: String, status: HTTPResponse.Status = .ok) -> MockResponse {
        MockResponse(status: status, headerFields: [.contentType: "application/json"], body: Data(text.utf8))
    }

    /// Reads a fixture's bytes (see the type's documentation); `source` names it in errors.
    public init(fixture bytes: Data, source: String) throws(ServiceError) {
        if bytes.starts(with: Array("HTTP/".utf8)) {
            self = try Self.parseWholeResponse(Array(bytes), source: source)
            return
        }
        do {
            _ = try JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])
        } catch {
            throw ServiceError(
                .decodingFailed,
                "Fixture \(source) is not valid JSON (\(error)); a fixture that is not JSON must start with a status line such as HTTP/1.1 200 OK."
            )
        }
        self = MockResponse(status: 200, headerFields: [.contentType: "application/json"], body: bytes)
    }

    var transportResponse: TransportResponse {
        TransportResponse(head: HTTPResponse(status: status, headerFields: headerFields), body: body)
    }

    private static func parseWholeResponse(_ bytes: [UInt8], source: String) throws(ServiceError) -> MockResponse {
        func malformed(_ why: String) -> ServiceError {
            ServiceError(.malformedResponse, "Fixture \(source): \(why).")
        }
        // Split off the head at the first blank line (CRLF or LF line endings).
        var lines: [String] = []
        var index = 0
        var lineStart = 0
        var bodyStart = bytes.count
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                var end = index
                if end > lineStart && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                if end == lineStart {
                    bodyStart = index + 1
                    break
                }
                lines.append(String(decoding: bytes[lineStart..<end], as: UTF8.self))
                lineStart = index + 1
            }
            index += 1
        }
        if index >= bytes.count && lineStart < bytes.count {
            lines.append(String(decoding: bytes[lineStart...], as: UTF8.self))
        }
        guard let statusLine = lines.first else { throw malformed("empty") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]), (100...999).contains(status) else {
            throw malformed("the status line \"\(statusLine)\" has no status code")
        }
        guard lines.count <= FieldLimits.maximumCount else {
            throw malformed("more than \(FieldLimits.maximumCount) header lines")
        }
        var fields = HTTPFields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                throw malformed("\"\(line)\" is not a header line (Name: value)")
            }
            fields.append(HTTPField(name: name, value: String(line[line.index(after: colon)...]).trimmingSpaces))
        }
        return MockResponse(
            status: HTTPResponse.Status(code: status), headerFields: fields,
            body: Data(bytes[min(bodyStart, bytes.count)...]))
    }
}

/// A resource that carries its own mock response, used by ``Fixtures`` before any file.
public protocol MockableResource: Resource {
    /// The response to serve in mock mode (nil: look for the fixture file).
    var mockResponse: MockResponse? { get }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
