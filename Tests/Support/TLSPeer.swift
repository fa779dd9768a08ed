import CourierCore
import Foundation

/// A TLS peer for tests: `openssl s_server` on 127.0.0.1 with a self-signed certificate
/// made at start. In `-HTTP` mode it serves files from its directory, each holding a whole
/// HTTP/1.0 response (see ``serve(_:response:)``). Keeping the TLS server out of the Swift
/// build keeps a TLS library out of Courier's dependency graph.
public final class TLSPeer: Sendable {
    public let directory: String
    public let port: Int
    /// The server certificate (self-signed, valid for 127.0.0.1 and localhost), usable as a CA file.
    public let certificateFile: String
    /// The server key's pin in curl's form: `sha256//<base64>`.
    public let publicKeyPin: String
    private let process: ChildProcess
    private let stopped = LockedValue(false)

    private init(directory: String, port: Int, certificateFile: String, publicKeyPin: String, process: ChildProcess) {
        self.directory = directory
        self.port = port
        self.certificateFile = certificateFile
        self.publicKeyPin = publicKeyPin
        self.process = process
    }

    /// `127.0.0.1:<port>`
    public var authority: String { "127.0.0.1:\(port)" }

    /// Starts a peer. With `clientCertificateAuthority`, it demands a client certificate
    /// signed by (or equal to) that PEM file. The waiting (openssl) happens on a thread of its own, off the cooperative pool.
    public static func start(clientCertificateAuthority: String? = nil) async throws -> TLSPeer {
        try await offCooperativePool {
            try startBlocking(clientCertificateAuthority: clientCertificateAuthority, identity: nil)
        }
    }

    /// Starts a peer that presents `identity` (made by a ``RevocationAuthority``) with its
    /// issuer in the chain, and staples `stapledResponse` (a DER OCSP response) when given.
    public static func start(identity: ServerIdentity, stapledResponse: String? = nil) async throws -> TLSPeer {
        try await offCooperativePool {
            try startBlocking(clientCertificateAuthority: nil, identity: identity, stapledResponse: stapledResponse)
        }
    }

    private static func startBlocking(
        clientCertificateAuthority: String?, identity: ServerIdentity?, stapledResponse: String? = nil
    ) throws -> TLSPeer {
        let directory = NSTemporaryDirectory() + "courier-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (certificate, key) =
            try identity.map { ($0.certificate, $0.key) } ?? makeCertificate(in: directory, name: "server")
        let pin = try publicKeyPin(ofCertificate: certificate)

        var arguments = [
            "openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", key, "-HTTP",
        ]
        if let clientCertificateAuthority { arguments += ["-Verify", "1", "-CAfile", clientCertificateAuthority] }
        if let issuer = identity?.issuer { arguments += ["-cert_chain", issuer] }
        if let stapledResponse { arguments += ["-status_file", stapledResponse] }
        // s_server -HTTP serves files from its working directory.
        let command = "cd '\(directory)' && exec " + arguments.map { "'\($0)'" }.joined(separator: " ")
        let output = OutputPipe()
        let process = try ChildProcess.spawn("/bin/sh", ["-c", command], standardOutput: output.writeEnd)
        output.closeWriteEnd()

        // s_server prints "ACCEPT 127.0.0.1:<port>" once it listens.
        var port = 0
        var seen = ""
        while port == 0 {
            let line = output.readLine()
            if line.isEmpty { break }
            seen += String(decoding: line, as: UTF8.self)
            if line.starts(with: Array("ACCEPT".utf8)),
                let value = String(decoding: line, as: UTF8.self).split(separator: ":").last
                    .flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
            {
                port = value
            }
        }
        guard port != 0 else {
            kill(process.pid, SIGKILL)
            process.wait()
            throw TLSPeerError.didNotStart(seen)
        }
        return TLSPeer(
            directory: directory, port: port, certificateFile: certificate, publicKeyPin: pin,
            process: process)
    }

    /// Makes `GET /<name>` answer with `response` (a whole HTTP/1.0 response).
    public func serve(_ name: String, response: String) throws {
        try response.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    /// The pin of the public key in the PEM certificate at `path`, as `TLSOptions.pinnedPublicKeys` takes it.
    public static func publicKeyPin(ofCertificate path: String) throws -> String {
        let digest = try shell(
            "openssl x509 -in '\(path)' -pubkey -noout | openssl pkey -pubin -outform der"
                + " | openssl dgst -sha256 -binary | base64")
        return "sha256//" + digest.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes a self-signed certificate and key in `directory`; returns their paths.
    public static func makeCertificate(in directory: String, name: String) throws -> (certificate: String, key: String)
    {
        let certificate = directory + "/\(name).pem"
        let key = directory + "/\(name)-key.pem"
        _ = try shell(
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout '\(key)'"
                + " -out '\(certificate)' -days 1 -subj '/CN=127.0.0.1'"
                + " -addext 'subjectAltName=IP:127.0.0.1,DNS:localhost' 2>/dev/null")
        return (certificate, key)
    }

    deinit { stop() }

    /// Stops the peer and removes its files. Safe to call more than once.
    public func stop() {
        guard
            stopped.withLock({ stopped in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        // s_server does not always stop on SIGTERM (it may inherit it blocked).
        kill(process.pid, SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    static func shell(_ command: String) throws -> String {
        let (status, output) = try ChildProcess.runBlocking("/bin/sh", ["-c", command])
        guard status == 0 else { throw TLSPeerError.commandFailed(command) }
        return String(decoding: output, as: UTF8.self)
    }
}

public enum TLSPeerError: Error {
    case didNotStart(String)
    case commandFailed(String)
}
