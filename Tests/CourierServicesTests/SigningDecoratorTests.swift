import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("Signing decorator")
struct SigningDecoratorTests {
    static let secret = "signing-secret"
    static let apiKey = HTTPField.Name("X-API-Key")!

    /// Signs method, path, timestamp, API key and body digest, as an HMAC-signed API would.
    static let sign: SigningDecorator.Signer = { request, digest in
        let timestamp = "1700000000"
        request.headerFields[HTTPField.Name("X-Timestamp")!] = timestamp
        request.headerFields[HTTPField.Name("X-Body-SHA256")!] = digest.hex
        let text = canonical(
            method: request.method.rawValue, path: request.path ?? "/", timestamp: timestamp,
            apiKey: request.headerFields[apiKey] ?? "", bodyDigest: digest.hex)
        request.headerFields[HTTPField.Name("X-Signature")!] = HMACSHA256.hex(key: secret, message: text)
    }

    static func signer() -> SigningDecorator { SigningDecorator(sign) }

    static func canonical(method: String, path: String, timestamp: String, apiKey: String, bodyDigest: String) -> String
    {
        [method, path, timestamp, apiKey, bodyDigest].joined(separator: "\n")
    }

    /// Checks the echoed request's signature against one recomputed from `body`.
    static func verify(_ echo: Echo, method: String, body: [UInt8]) {
        let digest = SHA256.hex(SHA256.hash(body))
        #expect(echo.bodyLength == body.count)
        #expect(echo.bodyCRC == Compression.crc32(body))
        #expect(echo.header("X-Body-SHA256") == digest)
        let text = canonical(
            method: method, path: echo.uri, timestamp: "1700000000", apiKey: echo.header("X-API-Key") ?? "",
            bodyDigest: digest)
        #expect(echo.header("X-Signature") == HMACSHA256.hex(key: secret, message: text))
        #expect(echo.header("X-API-Key") == "signed-key")
    }

    @Test("HMAC-SHA256 over the project's SHA256 matches RFC 4231")
    func hmacVectors() {
        #expect(
            HMACSHA256.hex(key: "Jefe", message: "what do ya want for nothing?")
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let longKey = [UInt8](repeating: 0xaa, count: 131)
        #expect(
            SHA256.hex(
                HMACSHA256.mac(
                    key: longKey, message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test("a JSON body is signed after the other decorators, and the server gets what was signed")
    func jsonBody() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [try APIKeyDecorator(key: "signed-key", in: .header("X-API-Key"))]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let body = try RequestBody.json(["name": .string("ada"), "n": .number(42)])
            let bytes = [UInt8](try #require(body.inMemoryBytes))
            let echo = try Echo(
                try await EchoResource(
                    base: server.baseURL, query: ["q": "1"], decorators: [Self.signer()], method: .post, body: body
                ).load(using: coordinator))
            #expect(echo.uri == "/echo?q=1")
            Self.verify(echo, method: "POST", body: bytes)
        }
    }

    @Test("a file body is digested from the file, across many read chunks")
    func fileBody() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sign-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var generator = SeededGenerator(seed: 18)
        let bytes = (0..<200_003).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [try APIKeyDecorator(key: "signed-key", in: .header("X-API-Key"))]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = EchoResource(
                base: server.baseURL, decorators: [Self.signer()], method: .put, body: .file(atPath: path))
            Self.verify(try Echo(try await resource.load(using: coordinator)), method: "PUT", body: bytes)
            // Segments digest as their concatenation.
            let head = Data("prefix-".utf8)
            let mixed = EchoResource(
                base: server.baseURL, decorators: [Self.signer()], method: .post,
                body: .segments([.bytes(head), .file(path: path)]))
            Self.verify(try Echo(try await mixed.load(using: coordinator)), method: "POST", body: Array(head) + bytes)
        }
    }

    @Test("a request without a body is signed over the digest of no bytes")
    func noBody() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [try APIKeyDecorator(key: "signed-key", in: .header("X-API-Key"))]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let echo = try Echo(
                try await EchoResource(base: server.baseURL, decorators: [Self.signer()]).load(using: coordinator))
            Self.verify(echo, method: "GET", body: [])
            #expect(RequestBodyDigest.empty.hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        }
    }

    @Test("an unreadable body file fails the load with decorationFailed (fileAccess) and sends nothing")
    func unreadableFile() async throws {
        try await withCoordinator { server, coordinator in
            let resource = EchoResource(
                base: server.baseURL, decorators: [Self.signer()], method: .put,
                body: .file(atPath: "/nonexistent/courier-\(UUID().uuidString)"))
            let error = await serviceError { _ = try await resource.load(using: coordinator) }
            #expect(error?.code == .decorationFailed)
            #expect((error?.underlying as? ServiceError)?.code == .fileAccess)
            #expect(server.requests(to: "/echo").isEmpty)
        }
    }
}
