import CourierServices
import CourierTesting
import Foundation
import Testing

/// The README's "Authentication" example, compiled and run against `MockTransport`.
@Suite struct AuthReadmeExampleTests {
    static let secret = "readme-secret"
    static func hmacSHA256(_ key: String, _ text: String) -> String { HMACSHA256.hex(key: key, message: text) }

    // README begins
    struct Upload: Resource {
        typealias Response = Void
        let file: String
        var method: HTTPRequest.Method { .put }
        var endpoint: Endpoint { Endpoint("https://api.example.com/v1", path: "/uploads") }
        var body: RequestBody? { .file(atPath: file) }
        // Sign last: the signer sees the final request (after the coordinator's, the backend's
        // and the resource's earlier decorators) and the SHA-256 of the body's bytes.
        var decorators: [any RequestDecorator] {
            [
                SigningDecorator { request, body in
                    let timestamp = String(Int(Date().timeIntervalSince1970))
                    let text = "\(request.method.rawValue)\n\(request.path ?? "/")\n\(timestamp)\n\(body.hex)"
                    request.headerFields[HTTPField.Name("X-Timestamp")!] = timestamp
                    request.headerFields[HTTPField.Name("X-Signature")!] = hmacSHA256(secret, text)
                }
            ]
        }
    }

    static func coordinator(transport: any HTTPTransport) throws -> RequestCoordinator {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [
            try BasicAuthDecorator(username: "ada", password: "s3cret"),
            try APIKeyDecorator(key: "k-123", in: .header("X-API-Key")),  // or .queryItem("api_key")
        ]
        return RequestCoordinator(transport: transport, configuration: configuration)
    }
    // README ends

    @Test func theAuthenticationExampleRuns() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("report".utf8).write(to: URL(fileURLWithPath: path))
        let mock = MockTransport()
        mock.respond(to: .put, "/v1/uploads", with: .status(204))
        try await Upload(file: path).load(using: try Self.coordinator(transport: mock))
        let sent = try #require(mock.requests.first?.request)
        #expect(sent.headerFields[.authorization] == "Basic " + Data("ada:s3cret".utf8).base64EncodedString())
        #expect(sent.headerFields[HTTPField.Name("X-API-Key")!] == "k-123")
        let timestamp = try #require(sent.headerFields[HTTPField.Name("X-Timestamp")!])
        let digest = SHA256.hex(SHA256.hash(Array("report".utf8)))
        #expect(
            sent.headerFields[HTTPField.Name("X-Signature")!]
                == Self.hmacSHA256(Self.secret, "PUT\n/v1/uploads\n\(timestamp)\n\(digest)"))
    }
}
