import CourierServices
import CourierTestServer
import Foundation
import Testing

@testable import CourierServices

/// Every body encoding, checked by what the loopback server's `/echo` received.
@Suite("Request bodies and endpoints")
struct RequestBodyTests {
    struct Post: Resource {
        typealias Response = Echo
        let base: String
        let makeBody: @Sendable () throws -> RequestBody
        var query: [URLQueryItem] = []
        var method: HTTPRequest.Method { .post }
        var endpoint: Endpoint { Endpoint(base, path: "/echo", query: query) }
        var body: RequestBody? { get throws { try makeBody() } }
        func decode(_ body: Data, response: HTTPResponse) throws -> Echo { try Echo(body) }
    }

    struct Person: Codable, Equatable {
        var name: String
        var age: Int
    }

    func echo(_ body: @escaping @Sendable () throws -> RequestBody, query: [URLQueryItem] = []) async throws -> Echo {
        try await withCoordinator { server, coordinator in
            try await Post(base: server.baseURL, makeBody: body, query: query).load(using: coordinator)
        }
    }

    @Test("JSON from an Encodable value")
    func jsonEncodable() async throws {
        let echo = try await echo { try .json(Person(name: "Ada", age: 36)) }
        #expect(echo.header("Content-Type") == "application/json")
        #expect(
            try JSONDecoder().decode(Person.self, from: Data((echo.body ?? "").utf8)) == Person(name: "Ada", age: 36))
    }

    @Test("JSON from a dictionary of JSON values")
    func jsonDictionary() async throws {
        let echo = try await echo {
            try .json(["name": "Ada", "tags": ["a", "b"], "age": 36, "ok": true, "none": nil])
        }
        #expect(echo.body == #"{"age":36,"name":"Ada","none":null,"ok":true,"tags":["a","b"]}"#)
    }

    @Test("an unencodable JSON value is encodingFailed and nothing is sent")
    func jsonFailure() async throws {
        try await withCoordinator { server, coordinator in
            let error = await serviceError {
                _ = try await Post(base: server.baseURL, makeBody: { try .json(["x": .number(.nan)]) }).load(
                    using: coordinator)
            }
            #expect(error?.code == .encodingFailed)
            #expect(server.requests(to: "/echo").isEmpty)
        }
    }

    @Test("form-URL-encoded, with spaces, plus signs, ampersands and unicode")
    func form() async throws {
        let echo = try await echo { .form(["q": "a b+c&d=e", "name": "Zoë ☃"]) }
        #expect(echo.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(echo.body == "q=a+b%2Bc%26d%3De&name=Zo%C3%AB+%E2%98%83")
    }

    @Test("query items are percent-encoded")
    func query() async throws {
        let echo = try await echo(
            { .string("") },
            query: [
                URLQueryItem(name: "q", value: "a b+c&d=e"), URLQueryItem(name: "ü", value: "☃/?#"),
                URLQueryItem(name: "flag", value: nil),
            ])
        #expect(echo.uri == "/echo?q=a%20b%2Bc%26d%3De&%C3%BC=%E2%98%83%2F%3F%23&flag")
    }

    @Test("multipart/form-data with fields and a file streamed from disk")
    func multipart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("report.txt").path
        let fileText = String(repeating: "line of the report\n", count: 2_000)
        try Data(fileText.utf8).write(to: URL(fileURLWithPath: path))
        let form = MultipartForm(boundary: "XyZ")
            .field("title", "Q3 \"final\"")
            .file("upload", path: path, contentType: "text/plain")
            .file("small", filename: "a.bin", data: Data([1, 2, 3]))
        let echo = try await echo { .multipart(form) }
        #expect(echo.header("Content-Type") == "multipart/form-data; boundary=XyZ")
        let expected =
            "--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nQ3 \"final\"\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"report.txt\"\r\n"
            + "Content-Type: text/plain\r\n\r\n" + fileText + "\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"small\"; filename=\"a.bin\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\n\u{1}\u{2}\u{3}\r\n--XyZ--\r\n"
        #expect(echo.bodyLength == expected.utf8.count)
        #expect(echo.body == expected)
        #expect(echo.header("Content-Length") == "\(expected.utf8.count)")
    }

    @Test("a multipart file that is missing fails with fileAccess")
    func multipartMissingFile() async throws {
        try await withCoordinator { server, coordinator in
            let form = MultipartForm().file("f", path: "/nonexistent/courier/file")
            let error = await serviceError {
                _ = try await Post(base: server.baseURL, makeBody: { .multipart(form) }).load(using: coordinator)
            }
            #expect(error?.code == .fileAccess)
        }
    }

    @Test("raw bytes and a file")
    func bytesAndFile() async throws {
        let bytes = try await echo { .bytes(Data([0, 1, 2, 255]), contentType: "application/octet-stream") }
        #expect(bytes.bodyLength == 4)
        #expect(bytes.header("Content-Type") == "application/octet-stream")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)").path
        try Data("file body".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try await echo { .file(atPath: path) }
        #expect(file.body == "file body")
    }

    @Test("endpoint paths join the base URL's path; bad base URLs are invalidRequest")
    func endpoints() throws {
        #expect(try Endpoint("https://api.test/v2/", path: "users/7").components().path == "/v2/users/7")
        #expect(try Endpoint("https://api.test", path: "/a b/ü").components().path == "/a%20b/%C3%BC")
        #expect(try Endpoint("http://127.0.0.1:8080").components().authority == "127.0.0.1:8080")
        #expect(throws: ServiceError.self) { try Endpoint("ftp://x.test").components() }
        #expect(throws: ServiceError.self) { try Endpoint("api.test").components() }
        #expect(throws: ServiceError.self) { try Endpoint("https://x.test?a=1").components() }
    }

    @Test("SHA-256 matches the standard test vectors")
    func sha256() {
        #expect(
            SHA256.hex(SHA256.hash(Array("".utf8)))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hex(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA256.hex(SHA256.hash(long)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256.hex(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
