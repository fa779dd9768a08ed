import CourierTransport
import Foundation
import Testing

@Suite("HTTPRequest from a URL string")
struct HTTPRequestURLStringTests {
    @Test("valid forms: scheme case, port, IPv6, query kept, fragment dropped, empty path")
    func validForms() throws {
        let users = try HTTPRequest(method: .get, urlString: "https://api.example.com/v1/users?id=7")
        #expect(users.scheme == "https" && users.authority == "api.example.com" && users.path == "/v1/users?id=7")
        #expect(users.method == .get)

        let upper = try HTTPRequest(method: .post, urlString: "HTTP://127.0.0.1:8080")
        #expect(upper.scheme == "http" && upper.authority == "127.0.0.1:8080" && upper.path == "/")
        #expect(upper.method == .post)

        let queryOnly = try HTTPRequest(method: .get, urlString: "http://example.com?q=a%20b#top")
        #expect(queryOnly.path == "/?q=a%20b")

        let fragment = try HTTPRequest(method: .get, urlString: "https://example.com/a/b#section")
        #expect(fragment.path == "/a/b")

        let ipv6 = try HTTPRequest(
            method: .get, urlString: "http://[::1]:9000/x", headerFields: [.accept: "text/plain"])
        #expect(ipv6.authority == "[::1]:9000" && ipv6.path == "/x")
        #expect(ipv6.headerFields[.accept] == "text/plain")
    }

    @Test(
        "invalid forms are invalidRequest, never a trap",
        arguments: [
            ("", "empty"),
            ("api.example.com/v1/users", "no scheme"),
            ("://example.com/", "no scheme"),
            ("ftp://example.com/file", "not http or https"),
            ("file:///etc/passwd", "not http or https"),
            ("https:///path", "no host"),
            ("https://", "no host"),
            ("https://:8080/", "no host"),
            ("https://example.com:99999/", "invalid port"),
            ("https://example.com:80a/", "invalid port"),
            ("https://example.com:/", "invalid port"),
            ("https://user:secret@example.com/", "credentials"),
            ("https://[::1/", "unclosed IPv6"),
            ("https://example.com/a b", "a space"),
            (" https://example.com/", "a space"),
            ("https://example.com/\r\nX-Injected: 1", "line break"),
            ("https://example.com/a\nb", "line break"),
            ("https://exa\tmple.com/", "control character"),
            ("https://example.com/café", "non-ASCII"),
        ])
    func invalidForms(url: String, reason: String) {
        do {
            let request = try HTTPRequest(method: .get, urlString: url)
            Issue.record("'\(url)' was accepted as \(request)")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains(reason), "\(error.message)")
        }
    }
}
