internal import CourierCore
public import FoundationEssentials
public import HTTPTypes

extension MockTransport {
    /// A canned answer: a response, or a transport failure.
    public struct Reply: Sendable {
        enum Outcome: Sendable {
            case response(TransportResponse)
            case file(path: String, status: HTTPResponse.Status, headers: HTTPFields)
            case failure(ServiceError)
        }
        let outcome: Outcome

        /// A response with `status`, header fields and body.
        public static func status(_ status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data())
            -> Reply
        {
            Reply(
                outcome: .response(
                    TransportResponse(head: HTTPResponse(status: status, headerFields: headers), body: body)))
        }

        /// This response with `trailers` after its body, as a server sends them after a chunked
        /// body: a streamed body shows them once read to its end. A failure stays a failure, and
        /// a ``file(atPath:status:contentType:headers:)`` reply has no trailers (its body is read at send time).
        ///
        /// ```swift
        /// mock.respond(to: .get, "/export", with: .json("[]").withTrailers([.eTag: "\"v2\""]))
        /// ```
        public func withTrailers(_ trailers: HTTPFields) -> Reply {
            guard case .response(var response) = outcome else { return self }
            response.trailers = trailers
            return Reply(outcome: .response(response))
        }

        /// A response with the status code `status`.
        @available(*, deprecated, message: "Pass an HTTPResponse.Status (integer literals still work).")
        @_disfavoredOverload
        public static func status(_ status: Int, headers: HTTPFields = [:], body: Data = Data()) -> Reply {
            .status(HTTPResponse.Status(code: status), headers: headers, body: body)
        }

        /// A JSON response (`Content-Type: application/json`).
        public static func json(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Reply {
            var fields = headers
            fields[.contentType] = "application/json"
            return .status(status, headers: fields, body: Data(text.utf8))
        }

        /// `value` encoded as JSON with `encoder`. A value that cannot be encoded answers with
        /// an `encodingFailed` failure, so the test sees why.
        public static func json(
            encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder(), status: HTTPResponse.Status = .ok,
            headers: HTTPFields = [:]
        ) -> Reply {
            do {
                var fields = headers
                fields[.contentType] = "application/json"
                return .status(status, headers: fields, body: try encoder.encode(value))
            } catch {
                return .failure(.encodingFailed, "MockTransport could not encode \(type(of: value)): \(error)")
            }
        }

        /// The contents of the file at `path`, read when the request arrives (a missing file is
        /// a `fileAccess` failure naming it).
        public static func file(
            atPath path: String, status: HTTPResponse.Status = .ok, contentType: String = "application/json",
            headers: HTTPFields = [:]
        ) -> Reply {
            var fields = headers
            fields[.contentType] = contentType
            return Reply(outcome: .file(path: path, status: status, headers: fields))
        }

        /// A transport failure with `code`, as a real transport would throw it.
        public static func failure(_ code: ServiceError.Code, _ message: String = "") -> Reply {
            Reply(outcome: .failure(ServiceError(code, message.isEmpty ? "Injected by MockTransport." : message)))
        }

        // MARK: Faults

        /// The connection closed before a response arrived (`connectionClosed`, retryable).
        public static var droppedConnection: Reply {
            .failure(.connectionClosed, "MockTransport dropped the connection before the response.")
        }

        /// The request timed out (`timedOut`, retryable).
        public static var timedOut: Reply { .failure(.timedOut, "MockTransport let the request time out.") }

        /// A gzip body that does not inflate: `decompressionFailed`, as `CurlTransport` reports it.
        public static var corruptGzip: Reply {
            .failure(.decompressionFailed, "MockTransport served a corrupt gzip body.")
        }

        /// `429 Too Many Requests` with `Retry-After` in whole seconds.
        public static func tooManyRequests(retryAfter: Duration) -> Reply {
            .status(429, headers: [.retryAfter: "\(retryAfter.components.seconds)"], body: Data("slow down".utf8))
        }

        /// `503 Service Unavailable`, with `Retry-After` in whole seconds when given.
        public static func serviceUnavailable(retryAfter: Duration? = nil) -> Reply {
            var headers = HTTPFields()
            if let retryAfter { headers[.retryAfter] = "\(retryAfter.components.seconds)" }
            return .status(503, headers: headers, body: Data("unavailable".utf8))
        }
    }
}
