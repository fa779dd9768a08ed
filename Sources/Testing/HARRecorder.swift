internal import CourierCore
internal import Foundation

/// A transport that sends through another one and records every exchange for a HAR 1.2 file.
///
/// ```swift
/// let recorder = HARRecorder(wrapping: CurlTransport())
/// let coordinator = RequestCoordinator(transport: recorder)
/// _ = try await UserService(id: 7).load(using: coordinator)
/// try recorder.write(to: "Fixtures/users.har")
/// ```
///
/// Credentials never reach the file: the values of `Authorization`, `Proxy-Authorization`,
/// `Cookie`, `Set-Cookie` and `X-API-Key`, of the query items in ``credentialQueryItems``
/// (or of the headers and query items you name instead) are replaced by `REDACTED`. Failed
/// transfers are recorded with status 0 and their error code, so a replay fails the same way.
public final class HARRecorder: HTTPTransport {
    /// The default redacted header fields.
    public static let credentialHeaders: [HTTPField.Name] = [
        .authorization, .proxyAuthorization, .cookie, .setCookie, HTTPField.Name("X-API-Key")!,
    ]
    /// The default redacted query items (API keys and tokens sent in the URL).
    public static let credentialQueryItems = ["api_key", "apikey", "api-key", "access_token"]
    /// What redacted values become.
    public static let redacted = "REDACTED"

    private let transport: any HTTPTransport
    private let redactedHeaders: [HTTPField.Name]
    private let redactedQueryItems: Set<String>
    private let entries = LockedValue<[HAR.Entry]>([])

    /// Records what passes through `transport`, redacting `redactedHeaders` (the credential
    /// headers by default) and the values of `redactedQueryItems` (the credential query items
    /// by default). A list of your own replaces the default one: to add to it, pass
    /// `HARRecorder.credentialHeaders + [yours]` (or `credentialQueryItems + [yours]`).
    public init(
        wrapping transport: any HTTPTransport, redactedHeaders: [HTTPField.Name] = HARRecorder.credentialHeaders,
        redactedQueryItems: [String] = HARRecorder.credentialQueryItems
    ) {
        self.transport = transport
        self.redactedHeaders = redactedHeaders
        self.redactedQueryItems = Set(redactedQueryItems)
    }

    /// The entries recorded so far.
    package var recorded: [HAR.Entry] { entries.withLock { $0 } }

    /// The recording as a HAR document.
    package var document: HAR.Document { HAR.Document(log: HAR.Log(entries: recorded)) }

    /// Writes the recording to `path` as pretty-printed JSON.
    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(document).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        let started = Date()
        let clock = ContinuousClock.now
        do {
            let response = try await transport.send(request, body: body, options: options)
            record(
                request, body: body, started: started, elapsed: ContinuousClock.now - clock, outcome: .success(response)
            )
            return response
        } catch {
            let failure = ServiceError.wrapping(error)
            if failure.code != .cancelled {
                record(
                    request, body: body, started: started, elapsed: ContinuousClock.now - clock,
                    outcome: .failure(failure))
            }
            throw failure
        }
    }

    private func record(
        _ request: HTTPRequest, body: RequestBody?, started: Date, elapsed: Duration,
        outcome: Result<TransportResponse, ServiceError>
    ) {
        let milliseconds = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        let url = HARURL(request)
        let query = url.query.map {
            HAR.NameValue(name: $0.name, value: redactedQueryItems.contains($0.name) ? Self.redacted : $0.value)
        }
        var postData: HAR.PostData?
        var requestSize = 0
        if let body {
            let bytes = body.inMemoryBytes ?? Data()
            let (text, base64) = HAR.text(of: bytes)
            postData = HAR.PostData(
                mimeType: request.headerFields[.contentType] ?? body.contentType ?? "application/octet-stream",
                text: text, _encoding: base64 ? "base64" : nil)
            requestSize = bytes.count
        }
        let harRequest = HAR.Request(
            method: request.method.rawValue, url: url.redacted(query: query), httpVersion: "HTTP/1.1",
            headers: redact(request.headerFields), queryString: query, postData: postData, bodySize: requestSize)
        let harResponse: HAR.Response
        var errorCode: String?
        switch outcome {
        case .success(let response):
            let (text, base64) = HAR.text(of: response.body)
            harResponse = HAR.Response(
                status: response.head.status.code, statusText: response.head.status.reasonPhrase,
                httpVersion: response.metrics.httpVersion.isEmpty ? "HTTP/1.1" : response.metrics.httpVersion,
                headers: redact(response.head.headerFields),
                content: HAR.Content(
                    size: response.body.count, mimeType: response.head.headerFields[.contentType] ?? "",
                    text: text, encoding: base64 ? "base64" : nil),
                bodySize: response.body.count)
        case .failure(let error):
            errorCode = error.code.description
            harResponse = HAR.Response(
                status: 0, statusText: error.message, httpVersion: "", headers: [],
                content: HAR.Content(size: 0, mimeType: "", text: nil, encoding: nil), bodySize: -1)
        }
        let entry = HAR.Entry(
            startedDateTime: started.formatted(
                .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)),
            time: milliseconds, request: harRequest, response: harResponse,
            timings: HAR.Timings(send: 0, wait: milliseconds, receive: 0), _courierError: errorCode)
        entries.withLock { $0.append(entry) }
    }

    private func redact(_ fields: HTTPFields) -> [HAR.NameValue] {
        fields.map { field in
            HAR.NameValue(
                name: field.name.rawName, value: redactedHeaders.contains(field.name) ? Self.redacted : field.value)
        }
    }
}

/// A request's URL split for HAR: the part before the query and the query's items, in order.
struct HARURL: Equatable {
    var base: String
    var query: [HAR.NameValue]

    init(_ request: HTTPRequest) {
        let target = request.path ?? "/"
        let prefix = "\(request.scheme ?? "http")://\(request.authority ?? "")"
        let mark = target.firstIndex(of: "?") ?? target.endIndex
        base = prefix + target[..<mark]
        query = mark == target.endIndex ? [] : Self.items(target[target.index(after: mark)...])
    }

    init(string: String) {
        let mark = string.firstIndex(of: "?") ?? string.endIndex
        base = String(string[..<mark])
        query = mark == string.endIndex ? [] : Self.items(string[string.index(after: mark)...])
    }

    static func items(_ query: Substring) -> [HAR.NameValue] {
        query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return HAR.NameValue(
                name: PercentEncoding.decode(parts[0]),
                value: parts.count > 1 ? PercentEncoding.decode(parts[1]) : "")
        }
    }

    /// The URL with `items` (already redacted), percent-encoded to RFC 3986's unreserved set.
    func redacted(query items: [HAR.NameValue]) -> String {
        guard !items.isEmpty else { return base }
        return base + "?"
            + items.map {
                "\(PercentEncoding.encodeQueryComponent($0.name))=\(PercentEncoding.encodeQueryComponent($0.value))"
            }.joined(separator: "&")
    }
}
