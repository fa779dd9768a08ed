import Foundation

/// A server certificate and key in PEM files, with the authority that issued it.
public struct ServerIdentity: Sendable {
    public let certificate: String
    public let key: String
    /// The issuing authority's certificate (PEM).
    public let issuer: String
}

/// A test certificate authority made at test time with `openssl ca`: two server
/// certificates for 127.0.0.1, one of them revoked, the authority's revocation list, and an
/// OCSP response for each certificate signed by the authority (what a server staples).
/// The files are removed when the value goes.
public final class RevocationAuthority: Sendable {
    public let directory: String
    /// The authority's certificate: a CA file for `TLSOptions.certificateAuthorityFile`.
    public let certificateFile: String
    /// The revocation list (PEM), naming ``revoked``.
    public let revocationList: String
    /// A certificate in good standing.
    public let good: ServerIdentity
    /// A certificate the authority revoked.
    public let revoked: ServerIdentity

    private init(
        directory: String, certificateFile: String, revocationList: String, good: ServerIdentity,
        revoked: ServerIdentity
    ) {
        self.directory = directory
        self.certificateFile = certificateFile
        self.revocationList = revocationList
        self.good = good
        self.revoked = revoked
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// The OCSP response for `identity` (DER): "good" or "revoked".
    public func ocspResponse(for identity: ServerIdentity) -> String {
        identity.certificate.replacingOccurrences(of: ".pem", with: "-ocsp.der")
    }

    /// Makes the authority, both certificates, the list and the responses; the dozen openssl
    /// runs wait on a thread of their own, off the cooperative pool.
    public static func make() async throws -> RevocationAuthority {
        try await offCooperativePool { try makeBlocking() }
    }

    /// An empty revocation list (PEM) signed by an existing authority (`certificate` and `key`,
    /// PEM files), written into `directory`.
    public static func emptyRevocationList(certificate: String, key: String, in directory: String) async throws
        -> String
    {
        let script = """
            set -e
            cd "$0"
            exec >crl-openssl.log 2>&1
            printf '[ca]\\ndefault_ca = courier\\n[courier]\\ndatabase = crl-index.txt\\ndefault_md = sha256\\ndefault_crl_days = 2\\n' \
                > crl.cnf
            : > crl-index.txt
            openssl ca -config crl.cnf -keyfile "$2" -cert "$1" -gencrl -out empty-crl.pem
            """
        let (status, _) = try await offCooperativePool {
            try ChildProcess.runBlocking("/bin/sh", ["-c", script, directory, certificate, key])
        }
        guard status == 0 else { throw TLSPeerError.commandFailed("openssl ca -gencrl in \(directory)") }
        return directory + "/empty-crl.pem"
    }

    private static func makeBlocking() throws -> RevocationAuthority {
        let directory = NSTemporaryDirectory() + "courier-revocation-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd "$0"
            exec >openssl.log 2>&1
            curve="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $curve -keyout ca-key.pem -out ca.pem -days 2 -subj '/CN=Courier Revocation CA' \
                -addext 'basicConstraints=critical,CA:TRUE' \
                -addext 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature'
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' \
                > server.ext
            printf '[ca]\\ndefault_ca = courier\\n[courier]\\ndatabase = index.txt\\ndefault_md = sha256\\ndefault_crl_days = 2\\n' \
                > ca.cnf
            : > index.txt
            for name in good revoked; do
                openssl req $curve -keyout $name-key.pem -out $name.csr -subj "/CN=127.0.0.1 $name"
                openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
                    -extfile server.ext -out $name.pem
            done
            openssl ca -config ca.cnf -keyfile ca-key.pem -cert ca.pem -valid good.pem
            openssl ca -config ca.cnf -keyfile ca-key.pem -cert ca.pem -revoke revoked.pem
            openssl ca -config ca.cnf -keyfile ca-key.pem -cert ca.pem -gencrl -out crl.pem
            for name in good revoked; do
                openssl ocsp -issuer ca.pem -cert $name.pem -no_nonce -reqout $name-request.der
                openssl ocsp -index index.txt -rsigner ca.pem -rkey ca-key.pem -CA ca.pem \
                    -reqin $name-request.der -respout $name-ocsp.der -ndays 2
            done
            """
        let (status, _) = try ChildProcess.runBlocking("/bin/sh", ["-c", script, directory])
        guard status == 0 else {
            let log = (try? String(contentsOfFile: directory + "/openssl.log", encoding: .utf8)) ?? ""
            throw TLSPeerError.commandFailed("openssl ca: " + log)
        }
        let path = directory
        func identity(_ name: String) -> ServerIdentity {
            ServerIdentity(certificate: "\(path)/\(name).pem", key: "\(path)/\(name)-key.pem", issuer: "\(path)/ca.pem")
        }
        return RevocationAuthority(
            directory: directory, certificateFile: path + "/ca.pem", revocationList: path + "/crl.pem",
            good: identity("good"), revoked: identity("revoked"))
    }
}
