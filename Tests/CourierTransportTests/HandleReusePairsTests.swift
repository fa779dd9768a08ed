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
        #expect(
            asksForCodings == profile.options.decompressesResponses, "\(context): Accept-Encoding \(asksForCodings)")
    }

    // MARK: TLS settings

    /// A way of reaching a TLS server, and what must come of it.
    struct SecureProfile: Sendable, CustomStringConvertible {
        enum Server: Sendable { case nginx, peer, strictPeer }
        var name: String
        var server: Server
        var tls = TLSOptions()
        /// The error codes the transfer may end with; empty: it must succeed.
        var failures: [ServiceError.Code] = []

        var description: String { name }
    }

    /// Three servers: nginx (keeps connections open, so a transfer there can reuse one and
    /// leave its handle unreset), a TLS peer with another certificate, and one that demands a
    /// client certificate. Each setting is tried where a leak would change the outcome: a
    /// certificate authority or verification turned off on nginx with the default trust, a pin
    /// of nginx's key on the other peer, a client certificate on the strict peer.
    static func secureProfiles(
        nginx: NginxServer, nginxPin: String, peer: TLSPeer, strict: TLSPeer, client: ClientCertificate,
        foreignRevocationList: String, nginxRevocationList: String
    )
        -> [SecureProfile]
    {
        var trustingNginx = TLSOptions()
        trustingNginx.certificateAuthorityFile = nginx.certificateAuthorityFile
        var pinnedNginx = trustingNginx
        pinnedNginx.pinnedPublicKeys = [nginxPin]
        var nginxWithClientCertificate = trustingNginx
        nginxWithClientCertificate.clientCertificate = client
        var unverified = TLSOptions()
        unverified.verifiesPeer = false
        var trustingPeer = TLSOptions()
        trustingPeer.certificateAuthorityFile = peer.certificateFile
        var trustingStrict = TLSOptions()
        trustingStrict.certificateAuthorityFile = strict.certificateFile
        var mutual = trustingStrict
        mutual.clientCertificate = client
        // nginx staples nothing, and a revocation list must come from the server's own
        // authority: both fail there, and either carried over would fail the next transfer.
        var stapling = trustingNginx
        stapling.requiresOCSPStapling = true
        var foreignList = trustingNginx
        foreignList.certificateRevocationListFile = foreignRevocationList
        // nginx's own authority's (empty) list succeeds over a kept-alive connection, so its
        // handle goes on unreset: carried into a transfer to the peer (another authority, no
        // list), it would fail that transfer.
        var ownList = trustingNginx
        ownList.certificateRevocationListFile = nginxRevocationList
        return [
            SecureProfile(name: "nginx, trusting its authority", server: .nginx, tls: trustingNginx),
            SecureProfile(name: "nginx, with its key pinned", server: .nginx, tls: pinnedNginx),
            SecureProfile(
                name: "nginx, offering a client certificate", server: .nginx, tls: nginxWithClientCertificate),
            SecureProfile(name: "nginx, without verification", server: .nginx, tls: unverified),
            SecureProfile(name: "nginx, with the default trust", server: .nginx, failures: [.tlsFailed]),
            SecureProfile(
                name: "nginx, requiring a stapled OCSP response", server: .nginx, tls: stapling,
                failures: [.tlsFailed]),
            SecureProfile(
                name: "nginx, with another authority's revocation list", server: .nginx, tls: foreignList,
                failures: [.tlsFailed]),
            SecureProfile(name: "nginx, with its authority's revocation list", server: .nginx, tls: ownList),
            SecureProfile(name: "the peer, trusting its certificate", server: .peer, tls: trustingPeer),
            SecureProfile(name: "the strict peer, with a client certificate", server: .strictPeer, tls: mutual),
            SecureProfile(
                name: "the strict peer, without a client certificate", server: .strictPeer, tls: trustingStrict,
                failures: [.tlsFailed, .connectionClosed]),
        ]
    }

    /// The same for TLS settings. Each first transfer runs twice, so that the second reuses
    /// nginx's connection and its handle goes on without a reset (one that opens a connection
    /// is reset anyway); a certificate authority, a pin, verification turned off, a client
    /// certificate, required stapling or a revocation list carried into the next transfer would
    /// make one of its failures succeed, or a success fail.
    @Test func noTLSSettingReachesTheNextTransferOnTheSameHandle() async throws {
        let nginx = try await NginxServer.start()
        let nginxPin = try TLSPeer.publicKeyPin(ofCertificate: nginx.directory + "/server.pem")
        let peer = try await TLSPeer.start()
        try peer.serve("hello", response: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello over tls")
        let clientDirectory = try TemporaryDirectory()
        let certificate = try TLSPeer.makeCertificate(in: clientDirectory.path, name: "client")
        let strict = try await TLSPeer.start(clientCertificateAuthority: certificate.certificate)
        try strict.serve("hello", response: "HTTP/1.0 200 OK\r\n\r\nmutual")
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1
        let transport = CurlTransport(configuration: configuration)
        let client = ClientCertificate(certificateFile: certificate.certificate, privateKeyFile: certificate.key)
        let revocation = try await RevocationAuthority.make()
        let profiles = Self.secureProfiles(
            nginx: nginx, nginxPin: nginxPin, peer: peer, strict: strict, client: client,
            foreignRevocationList: revocation.revocationList,
            nginxRevocationList: try await RevocationAuthority.emptyRevocationList(
                certificate: nginx.directory + "/ca.pem", key: nginx.directory + "/ca-key.pem", in: nginx.directory))

        func send(_ profile: SecureProfile, after previous: SecureProfile?) async {
            let context = previous.map { "\(profile) after \($0)" } ?? "\(profile)"
            let request: HTTPRequest
            switch profile.server {
            case .nginx:
                request = HTTPRequest(method: .get, scheme: "https", authority: nginx.authority, path: "/echo/x")
            case .peer: request = HTTPRequest(method: .get, scheme: "https", authority: peer.authority, path: "/hello")
            case .strictPeer:
                request = HTTPRequest(method: .get, scheme: "https", authority: strict.authority, path: "/hello")
            }
            var options = TransferOptions()
            options.tls = profile.tls
            do {
                let response = try await transport.send(request, body: nil, options: options)
                #expect(profile.failures.isEmpty, "\(context): expected \(profile.failures), got a response")
                #expect(response.head.status.code == 200, "\(context)")
                let expected = [SecureProfile.Server.peer: "hello over tls", .strictPeer: "mutual"][profile.server]
                if let expected { #expect(String(decoding: response.body, as: UTF8.self) == expected, "\(context)") }
            } catch let error as ServiceError {
                #expect(profile.failures.contains(error.code), "\(context): \(error)")
            } catch {
                Issue.record("\(context): \(error)")
            }
        }

        for first in profiles {
            for second in profiles {
                await send(first, after: nil)
                await send(first, after: first)
                await send(second, after: first)
            }
        }
        await transport.shutdown()
        strict.stop()
        peer.stop()
        nginx.stop()
    }
}
