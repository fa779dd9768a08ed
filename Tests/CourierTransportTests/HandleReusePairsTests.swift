import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// Every ordered pair of the option sets the transport produces, back to back on one easy
/// handle: the second transfer shows none of the first's settings at the server. The guard of
/// handle reuse without `curl_easy_reset` (`OptionFootprint`, see PERFORMANCE.md): an option
/// that some transfers set and that `footprint` forgot would carry a method, a body, a socket
/// path, a proxy or a limit into the next request, and one of these pairs would show it.
@Suite struct HandleReusePairsTests {
    /// One way of sending, and what the server must see (or the error it must end with).
    struct Profile: Sendable, CustomStringConvertible {
        var name: String
        var method: HTTPRequest.Method = .get
        var path = "/echo"
        var body: RequestBody?
        var options = TransferOptions()
        /// Whether the request goes to the Unix-socket server rather than the TCP one.
        var viaUnixSocket = false
        /// The error code the transfer must end with; nil: it must succeed.
        var failure: ServiceError.Code?

        var description: String { name }
    }

    static func profiles(unixSocket: String, progress: ProgressReporter) -> [Profile] {
        var tuned = TransferOptions()
        tuned.connectTimeout = .seconds(5)
        tuned.timeout = .seconds(20)
        tuned.idleTimeout = nil
        tuned.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1, duration: .seconds(30))
        tuned.maximumBodySize = 1 << 20
        tuned.maximumHeaderSize = 32 << 10
        tuned.httpVersion = .http1
        tuned.progress = progress
        var unix = TransferOptions()
        unix.unixSocketPath = unixSocket
        var proxied = TransferOptions()
        proxied.proxy = .url("http://127.0.0.1:9", bypass: ["example.invalid"])
        var limited = TransferOptions()
        limited.maximumBodySize = 10
        var identity = TransferOptions()
        identity.decompressesResponses = false
        return [
            Profile(name: "GET"),
            Profile(name: "HEAD", method: .head),
            Profile(name: "POST with a body", method: .post, body: .string("abc", contentType: "text/plain")),
            Profile(name: "PUT with a body", method: .put, body: .bytes(Data(repeating: 7, count: 5_000))),
            Profile(name: "DELETE", method: .delete),
            Profile(name: "through a Unix socket", options: unix, viaUnixSocket: true),
            Profile(name: "through a proxy that refuses", options: proxied, failure: .cannotConnect),
            Profile(name: "with timeouts, a speed limit and progress", options: tuned),
            Profile(name: "over a 10-byte limit", path: "/bytes?n=100", options: limited, failure: .responseTooLarge),
            Profile(name: "without decompression", options: identity),
        ]
    }

    @Test func noSettingReachesTheNextTransferOnTheSameHandle() async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("pairs.sock")
        let tcp = try await TestServer.start()
        let unix = try await TestServer.start(unixSocketPath: socket)
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1  // one loop, one transfer at a time: each reuses the last handle
        let transport = CurlTransport(configuration: configuration)
        let (progress, reporter) = ProgressReporter.makeStream()
        let drain = Task { for await _ in progress {} }
        let profiles = Self.profiles(unixSocket: socket, progress: reporter)

        var checked = 0
        for first in profiles {
            for second in profiles {
                try await Self.send(first, after: nil, tcp: tcp, unix: unix, transport: transport)
                try await Self.send(second, after: first, tcp: tcp, unix: unix, transport: transport)
                checked += 1
            }
        }
        #expect(checked == profiles.count * profiles.count)
        await transport.shutdown()
        reporter.finish()
        await drain.value
        await tcp.stop()
        await unix.stop()
    }

    /// Sends `profile` and checks what the server saw; `after` names the transfer before it on
    /// the handle, for the message.
    static func send(
        _ profile: Profile, after previous: Profile?, tcp: TestServer, unix: TestServer, transport: CurlTransport
    ) async throws {
        let context = previous.map { "\(profile) after \($0)" } ?? "\(profile)"
        let server = profile.viaUnixSocket ? unix : tcp
        let other = profile.viaUnixSocket ? tcp : unix
        let before = (server.snapshot.requestCount, other.snapshot.requestCount)
        let authority = profile.viaUnixSocket ? "localhost" : tcp.authority
        let request = HTTPRequest(method: profile.method, scheme: "http", authority: authority, path: profile.path)
        let result: Result<TransportResponse, ServiceError>
        do {
            result = .success(try await transport.send(request, body: profile.body, options: profile.options))
        } catch let error as ServiceError {
            result = .failure(error)
        }
        if let failure = profile.failure {
            guard case .failure(let error) = result else {
                Issue.record("\(context): expected \(failure), got a response")
                return
            }
            #expect(error.code == failure, "\(context): \(error)")
            return
        }
        guard case .success(let response) = result else {
            Issue.record("\(context): \(result)")
            return
        }
        #expect(response.head.status.code == 200, "\(context)")
        // The request reached the server it was meant for, and only that one.
        #expect(server.snapshot.requestCount == before.0 + 1, "\(context): not at its server")
        #expect(other.snapshot.requestCount == before.1, "\(context): at the other server")
        guard profile.method != .head else {
            #expect(response.body.isEmpty, "\(context)")
            return
        }
        let echo = try Echo(response.body)
        #expect(echo.method == profile.method.rawValue, "\(context): sent as \(echo.method)")
        let expectedLength: Int
        switch profile.body {
        case .none: expectedLength = 0
        case .some: expectedLength = profile.method == .post ? 3 : 5_000
        }
        #expect(echo.bodyLength == expectedLength, "\(context): body of \(echo.bodyLength) bytes")
        if profile.body == nil {
            #expect(echo.header("content-type") == nil, "\(context): a content type without a body")
            #expect(echo.header("content-length") == nil || echo.header("content-length") == "0", "\(context)")
        }
        // Decompression asked for exactly when the options say so.
        let asksForCodings = echo.header("accept-encoding") != nil
        #expect(asksForCodings == profile.options.decompressesResponses, "\(context): Accept-Encoding \(asksForCodings)")
    }
}
