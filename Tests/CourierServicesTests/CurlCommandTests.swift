import CourierServices
import CourierTestServer
import Foundation
import Testing

/// Always the same token.
private struct FixedToken: TokenProvider {
    func currentToken() async throws -> String { "secret-token" }
    func refreshToken(replacing rejected: String) async throws -> String { "secret-token" }
}

/// `CurlCommand`, run for real: each command is handed to `/bin/sh` as printed, and curl sends it
/// to the loopback server's `/echo`, which answers what it received.
@Suite("curl commands")
struct CurlCommandTests {
    /// Runs `command` in a POSIX shell and decodes the server's echo from curl's output.
    private func run(_ command: CurlCommand) async throws -> Echo {
        let (status, output) = try await ChildProcess.run("/bin/sh", ["-c", "\(command) --silent --show-error"])
        #expect(status == 0, "curl exited with \(status): \(String(decoding: output, as: UTF8.self))")
        return try Echo(Data(output))
    }

    @Test("a request runs as printed: method, path, header fields and a body full of shell characters arrive as sent")
    func runsAsPrinted() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let awkward = "it's \"quoted\" $HOME `id` \\ ; & | * ? ~ ! {a,b} #"
        var request = HTTPRequest(
            method: .put, scheme: "http", authority: server.authority, path: "/echo?page=2&name=a%20b")
        request.headerFields[HTTPField.Name("X-Trace")!] = awkward
        request.headerFields[.accept] = "application/json"
        let body = "first line\n\(awkward)\nlast line, tab\there\n"
        let command = CurlCommand(request, body: .string(body, contentType: "text/plain; charset=utf-8"))
        let echo = try await run(command)
        #expect(echo.method == "PUT")
        #expect(echo.uri == "/echo?page=2&name=a%20b")
        #expect(echo.header("X-Trace") == awkward)
        #expect(echo.header("Accept") == "application/json")
        #expect(echo.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(echo.body == body)
        #expect(command.description.hasPrefix("curl -X PUT 'http://\(server.authority)/echo?page=2&name=a%20b' \\\n"))
    }

    @Test("credentials, cookies and secret query items, form fields and JSON members are masked, the rest kept")
    func secretsAreMasked() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var request = HTTPRequest(
            method: .post, scheme: "http", authority: server.authority,
            path: "/echo?q=shoes&api_key=k-123&access_token=t-456&X-Amz-Signature=s-789&page=3")
        request.headerFields[.authorization] = "Bearer t0ken-abc"
        request.headerFields[.cookie] = "session=c-1; theme=dark"
        request.headerFields[HTTPField.Name("X-API-Key")!] = "key-xyz"
        request.headerFields[HTTPField.Name("X-Request-ID")!] = "req-1"
        let json =
            #"{"user": "ada", "password": "hunter2", "nested": {"client_secret": "cs-1", "code": 123456}, "tags": ["password", "x"]}"#
        let command = CurlCommand(request, body: .string(json, contentType: "application/json"))
        let text = command.description
        for secret in ["k-123", "t-456", "s-789", "t0ken-abc", "c-1", "key-xyz", "hunter2", "cs-1", "123456"] {
            #expect(!text.contains(secret), "\(secret) is in \(text)")
        }
        let echo = try await run(command)
        #expect(echo.uri == "/echo?q=shoes&api_key=REDACTED&access_token=REDACTED&X-Amz-Signature=REDACTED&page=3")
        #expect(echo.header("Authorization") == "Bearer \(CurlCommand.redacted)")
        #expect(echo.header("Cookie") == "session=REDACTED; theme=REDACTED")
        #expect(echo.header("X-API-Key") == "REDACTED")
        #expect(echo.header("X-Request-ID") == "req-1")
        let expected =
            #"{"user": "ada", "password": "REDACTED", "nested": {"client_secret": "REDACTED", "code": "REDACTED"}, "tags": ["password", "x"]}"#
        #expect(echo.body == expected)

        let form = CurlCommand(
            HTTPRequest(method: .post, scheme: "http", authority: server.authority, path: "/echo"),
            body: .string(
                "grant_type=password&username=ada&pass%77ord=p1&client_secret=s2&scope=a+b",
                contentType: "application/x-www-form-urlencoded"),
            maskingAlso: ["Username"])
        #expect(
            try await run(form).body
                == "grant_type=password&username=REDACTED&pass%77ord=REDACTED&client_secret=REDACTED&scope=a+b")
    }

    @Test("a file body is sent from its path; binary and multipart bodies are described, not shown")
    func bodiesThatCannotBeInline() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-curl-\(getpid()).txt").path
        try Data("from a file 'with quotes'\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let request = HTTPRequest(method: .post, scheme: "http", authority: server.authority, path: "/echo")
        let echo = try await run(CurlCommand(request, body: .file(atPath: path, contentType: "text/plain")))
        #expect(echo.body == "from a file 'with quotes'\n")

        let untyped = try await run(CurlCommand(request, body: .string("no type")))
        #expect(untyped.body == "no type")
        #expect(untyped.header("Content-Type") == nil)

        let binary = CurlCommand(request, body: .bytes([0x00, 0xff, 0x10, 0x41]))
        #expect(binary.arguments.last == "@binary-body-4-bytes-not-shown")
        let large = CurlCommand(request, body: .string(String(repeating: "a", count: 64 * 1024 + 1)))
        #expect(large.arguments.last == "@binary-body-65537-bytes-not-shown")
        let form = MultipartForm().field("note", "hello").file("upload", path: path, contentType: "text/plain")
        #expect(CurlCommand(request, body: .multipart(form)).arguments.last == "@multipart-body-with-1-file-not-shown")
    }

    @Test("HEAD and GET: no -X; the password of user information is masked")
    func methodsAndUserInformation() {
        let head = CurlCommand(HTTPRequest(method: .head, scheme: "https", authority: "api.example", path: "/a"))
        #expect(head.description == "curl --head 'https://api.example/a'")
        let get = CurlCommand(HTTPRequest(method: .get, scheme: "https", authority: "ada:pw-1@api.example", path: "/a"))
        #expect(get.description == "curl 'https://ada:REDACTED@api.example/a'")
    }

    @Test("a failed load's error carries its request as a curl command, shown by its debug description")
    func failedLoadCarriesTheCommand() async throws {
        struct Missing: Resource {
            typealias Response = Data
            var base: String
            var endpoint: Endpoint { Endpoint(base, path: "/status/404", query: ["token": "t-1", "view": "full"]) }
            var headers: HTTPFields { [.accept: "application/json"] }
            var decorators: [any RequestDecorator] { [BearerTokenDecorator(tokens: FixedToken())] }
            var retryPolicy: RetryPolicy? { RetryPolicy.none }
        }
        try await withCoordinator { server, coordinator in
            let resource = Missing(base: server.baseURL)
            let error = await serviceError { _ = try await resource.load(using: coordinator) }
            let command = try #require(error?.curlCommand)
            #expect(
                command.description
                    == "curl 'http://\(server.authority)/status/404?token=REDACTED&view=full' \\\n  -H 'Accept: application/json'"
            )
            #expect(try resource.curlCommand(using: coordinator).description == command.description)
            let debug = String(reflecting: try #require(error))
            #expect(debug.contains("Request:\n\(command)"))
            #expect(debug.contains("Suggestion: "))
            #expect(!debug.contains("secret-token") && !debug.contains("t-1"))
        }
    }
}
