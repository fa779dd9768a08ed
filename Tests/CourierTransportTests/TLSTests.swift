import CourierTestServer
import CourierTransport
import Foundation
import Testing

@Suite struct TLSTests {
    let peer: TLSPeer
    let transport = CurlTransport()

    init() async throws {
        peer = try await TLSPeer.start()
        try peer.serve("hello", response: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello over tls")
    }

    func request(_ path: String = "/hello") -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: peer.authority, path: path)
    }

    func finish() async {
        await transport.shutdown()
        peer.stop()
    }

    /// HTTPS through a proxy goes through a CONNECT tunnel: the proxy's own "200 Connection
    /// established" head must not become the response's (curl hands it to the header callback
    /// unless told not to).
    @Test func theResponseThroughAProxyTunnelIsTheServersNotTheProxys() async throws {
        try peer.serve(
            "missing", response: "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nX-From: server\r\n\r\nnot here")
        let proxy = try ConnectProxy()
        defer { proxy.stop() }
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = peer.certificateFile
        options.proxy = .url("http://127.0.0.1:\(proxy.port)")
        let response = try await transport.send(request("/missing"), body: nil, options: options)
        #expect(response.head.status.code == 404)
        #expect(response.head.headerFields[HTTPField.Name("X-From")!] == "server")
        #expect(response.head.headerFields[HTTPField.Name("Proxy-Agent")!] == nil)
        #expect(String(decoding: response.body, as: UTF8.self) == "not here")
        let found = try await transport.send(request(), body: nil, options: options)
        #expect(found.head.status.code == 200)
        #expect(String(decoding: found.body, as: UTF8.self) == "hello over tls")
        #expect(proxy.tunnels.allSatisfy { $0 == peer.authority } && !proxy.tunnels.isEmpty)
        await finish()
    }

    @Test func anUntrustedCertificateIsRefusedByDefault() async throws {
        let error = await serviceError { _ = try await transport.send(request()) }
        #expect(error?.code == .tlsFailed)
        await finish()
    }

    @Test func theConfiguredCertificateAuthorityIsTrusted() async throws {
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = peer.certificateFile
        let response = try await transport.send(request(), body: nil, options: options)
        #expect(String(decoding: response.body, as: UTF8.self) == "hello over tls")
        #expect(response.metrics.tlsHandshake > .zero)
        await finish()
    }

    @Test func aMatchingPinIsAccepted() async throws {
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = peer.certificateFile
        options.tls.pinnedPublicKeys = [peer.publicKeyPin]
        let response = try await transport.send(request(), body: nil, options: options)
        #expect(response.head.status == .ok)
        await finish()
    }

    @Test func aWrongPinIsAPinningError() async throws {
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = peer.certificateFile
        options.tls.pinnedPublicKeys = ["sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
        let error = await serviceError { _ = try await transport.send(request(), body: nil, options: options) }
        #expect(error?.code == .pinningFailed)
        await finish()
    }

    @Test func aRedirectFromHTTPSToHTTPIsRefused() async throws {
        try peer.serve("downgrade", response: "HTTP/1.0 302 Found\r\nLocation: http://127.0.0.1:1/json\r\n\r\n")
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = peer.certificateFile
        let error = await serviceError {
            _ = try await transport.send(request("/downgrade"), body: nil, options: options)
        }
        #expect(error?.code == .redirectRefused)
        await finish()
    }

    @Test func mutualTLSPresentsTheClientCertificate() async throws {
        let clientDirectory = try TemporaryDirectory()
        let client = try TLSPeer.makeCertificate(in: clientDirectory.path, name: "client")
        let strict = try await TLSPeer.start(clientCertificateAuthority: client.certificate)
        try strict.serve("hello", response: "HTTP/1.0 200 OK\r\n\r\nmutual")
        let request = HTTPRequest(method: .get, scheme: "https", authority: strict.authority, path: "/hello")
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = strict.certificateFile

        let refused = await serviceError { _ = try await transport.send(request, body: nil, options: options) }
        #expect(refused.map { [.tlsFailed, .connectionClosed].contains($0.code) } == true)

        options.tls.clientCertificate = ClientCertificate(
            certificateFile: client.certificate, privateKeyFile: client.key)
        let response = try await transport.send(request, body: nil, options: options)
        #expect(String(decoding: response.body, as: UTF8.self) == "mutual")
        strict.stop()
        await finish()
    }

    /// An encrypted key is read with its password; a wrong one fails the transfer as a TLS
    /// failure, and the password is never printed.
    @Test func anEncryptedClientKeyIsReadWithItsPassword() async throws {
        let clientDirectory = try TemporaryDirectory()
        let client = try TLSPeer.makeCertificate(in: clientDirectory.path, name: "client")
        let encrypted = clientDirectory.file("client-key-encrypted.pem")
        let converted = try await ChildProcess.run(
            "/usr/bin/env",
            ["openssl", "pkey", "-in", client.key, "-aes256", "-passout", "pass:s3cret-pass", "-out", encrypted])
        try #require(converted.status == 0)
        let strict = try await TLSPeer.start(clientCertificateAuthority: client.certificate)
        try strict.serve("hello", response: "HTTP/1.0 200 OK\r\n\r\nencrypted")
        let request = HTTPRequest(method: .get, scheme: "https", authority: strict.authority, path: "/hello")
        var options = TransferOptions()
        options.tls.certificateAuthorityFile = strict.certificateFile

        options.tls.clientCertificate = ClientCertificate(
            certificateFile: client.certificate, privateKeyFile: encrypted, privateKeyPassword: "not-the-pass-9f3k")
        let refused = await serviceError { _ = try await transport.send(request, body: nil, options: options) }
        #expect(refused?.code == .tlsFailed)
        #expect(refused.map { "\($0)".contains("9f3k") } == false)

        options.tls.clientCertificate?.privateKeyPassword = "s3cret-pass"
        let response = try await transport.send(request, body: nil, options: options)
        #expect(String(decoding: response.body, as: UTF8.self) == "encrypted")
        #expect(options.tls.clientCertificate.map { "\($0)".contains("s3cret") } == false)
        strict.stop()
        await finish()
    }
}
