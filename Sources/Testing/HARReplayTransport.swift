internal import CourierCore
internal import Foundation

/// A transport that answers from a HAR file: each request is matched by method, URL and body
/// (headers are not compared, so recordings with redacted credentials still match). When one
/// request was recorded several times, the recordings answer in order and the last repeats.
///
/// ```swift
/// let replay = try HARReplayTransport(contentsOf: "Fixtures/users.har")
/// let user = try await UserService(id: 7).load(using: RequestCoordinator(transport: replay))
/// ```
public final class HARReplayTransport: HTTPTransport {
    /// What to do with a request the recording does not hold.
    ///
    /// A struct over a private enum, so that a new choice (record it, say) never breaks a
    /// caller's `switch`.
    public struct Unmatched: Sendable {
        enum Base: Sendable {
            case fail
            case passThrough(any HTTPTransport)
        }

        let base: Base

        /// Fail with `mockMissing`, naming the request (the default).
        public static let fail = Unmatched(base: .fail)
        /// Send it through `transport`.
        public static func passThrough(_ transport: any HTTPTransport) -> Unmatched {
            Unmatched(base: .passThrough(transport))
        }
    }

    private struct Recording {
        var method: String
        var url: HARURL
        var body: Data?
        var outcome: Result<TransportResponse, ServiceError>
    }

    private let recordings: [Recording]
    private let unmatched: Unmatched
    private let served = LockedValue<[Int: Int]>([:])

    /// Replays `document`.
    package init(_ document: HAR.Document, unmatched: Unmatched = .fail) {
        self.unmatched = unmatched
        recordings = document.log.entries.map { entry in
            let body = entry.request.postData.map { HAR.data(text: $0.text, base64: $0._encoding == "base64") }
            let outcome: Result<TransportResponse, ServiceError>
            if let code = entry._courierError {
                outcome = .failure(
                    ServiceError(ServiceError.Code(recorded: code), "Replayed failure: \(entry.response.statusText)"))
            } else if !(0...999).contains(entry.response.status) {
                // HTTPTypes traps on such a status; the recording is what is broken.
                let request = "\(entry.request.method) \(entry.request.url)"
                outcome = .failure(
                    ServiceError(
                        .malformedResponse,
                        "The HAR entry for \(request) has status \(entry.response.status), not a three-digit code."))
            } else if entry.response.headers.count > FieldLimits.maximumCount {
                outcome = .failure(
                    ServiceError(
                        .malformedResponse,
                        "A HAR entry has \(entry.response.headers.count) response headers; at most \(FieldLimits.maximumCount) are read."
                    ))
            } else {
                var fields = HTTPFields()
                for header in entry.response.headers {
                    if let name = HTTPField.Name(header.name) {
                        fields.append(HTTPField(name: name, value: header.value))
                    }
                }
                let content = entry.response.content
                let head = HTTPResponse(
                    status: HTTPResponse.Status(code: entry.response.status, reasonPhrase: entry.response.statusText),
                    headerFields: fields)
                outcome = .success(
                    TransportResponse(
                        head: head, body: HAR.data(text: content.text, base64: content.encoding == "base64")))
            }
            return Recording(
                method: entry.request.method, url: HARURL(string: entry.request.url), body: body, outcome: outcome)
        }
    }

    /// Replays the HAR file at `path`. A file that is not HAR 1.2 JSON throws `decodingFailed`.
    public convenience init(contentsOf path: String, unmatched: Unmatched = .fail) throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ServiceError(.fileAccess, "Could not read the HAR file \(path): \(error)", underlying: error)
        }
        do {
            self.init(try JSONDecoder().decode(HAR.Document.self, from: data), unmatched: unmatched)
        } catch {
            throw ServiceError(.decodingFailed, "\(path) is not a HAR 1.2 file: \(error)", underlying: error)
        }
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        let url = HARURL(request)
        let bytes = body?.inMemoryBytes
        let candidates = recordings.indices.filter { index in
            let recording = recordings[index]
            return recording.method == request.method.rawValue && Self.matches(recording.url, url)
                && (recording.body ?? Data()) == (bytes ?? Data())
        }
        guard !candidates.isEmpty else {
            switch unmatched.base {
            case .fail:
                throw ServiceError(
                    .mockMissing,
                    "The HAR recording has no \(request.method) \(url.redacted(query: url.query))"
                        + (bytes.map { " with a \($0.count)-byte body" } ?? "") + ".")
            case .passThrough(let transport):
                return try await transport.send(request, body: body, options: options)
            }
        }
        let key = candidates[0]
        let turn = served.withLock { served in
            defer { served[key, default: 0] += 1 }
            return min(served[key, default: 0], candidates.count - 1)
        }
        return try recordings[candidates[turn]].outcome.get()
    }

    /// Same base and items; a recorded `REDACTED` value matches any value.
    private static func matches(_ recorded: HARURL, _ url: HARURL) -> Bool {
        guard recorded.base == url.base, recorded.query.count == url.query.count else { return false }
        return zip(recorded.query, url.query).allSatisfy { recorded, actual in
            recorded.name == actual.name && (recorded.value == actual.value || recorded.value == HARRecorder.redacted)
        }
    }
}

extension ServiceError.Code {
    /// The code a recording names (an unknown name becomes a code of that name).
    init(recorded name: String) {
        let known: [ServiceError.Code] = [
            .invalidRequest, .timedOut, .cannotConnect, .dnsFailed, .tlsFailed, .pinningFailed, .connectionClosed,
            .truncatedBody, .malformedResponse, .headersTooLarge, .decompressionFailed, .unsupportedEncoding,
            .responseTooLarge, .tooManyRedirects, .redirectRefused, .fileAccess, .networkFailed, .cancelled,
            .shutDown, .unknown,
        ]
        self = known.first { $0.description == name } ?? .unknown
    }
}
