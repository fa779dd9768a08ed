import CourierServices
import CourierTestServer
import Foundation
import Testing

/// `Set-Cookie` parsing (RFC 6265, section 5.2 and the storage rules of 5.3).
@Suite("Cookie parsing")
struct CookieParsingTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func parse(_ field: String, host: String = "www.example.com", path: String = "/a/b/c", secure: Bool = true)
        -> Cookie?
    {
        Cookie(setCookie: field, host: host, path: path, isSecure: secure, now: now)
    }

    @Test("name, value and attributes are read; SameSite is ignored")
    func attributes() throws {
        let cookie = try #require(parse(" sid = a b=c ; Path=/app; Secure; HttpOnly; SameSite=Strict; Unknown=1"))
        #expect(cookie.name == "sid" && cookie.value == "a b=c")
        #expect(cookie.path == "/app" && cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.domain == "www.example.com" && cookie.isHostOnly && cookie.expires == nil)
        #expect(cookie.created == now)
    }

    @Test(
        "malformed, oversized or refused cookies are ignored",
        arguments: [
            "no-equals-sign", "=value", " =value", "a=b\u{1}c", "a=b\u{7F}",
            String(repeating: "x", count: 4090) + "=123456",
            "a=1; Domain=com", "a=1; Domain=.com", "a=1; Domain=other.org", "a=1; Domain=ample.com",
            "a=1; Domain=127.0.0.1", "a=1; Domain=example..com", "__Secure-a=1", "__Host-a=1; Secure",
            "__Host-a=1; Secure; Path=/; Domain=example.com",
        ])
    func refused(field: String) {
        #expect(parse(field) == nil)
    }

    @Test("a Secure cookie from http is refused; from https it is kept")
    func secureNeedsHTTPS() {
        #expect(parse("a=1; Secure", secure: false) == nil)
        #expect(parse("a=1; Secure", secure: true)?.isSecure == true)
        #expect(parse("__Host-a=1; Secure; Path=/")?.isHostOnly == true)
    }

    @Test("Domain: leading dot ignored, lower-cased, host-only when absent or the host is single-label or an IP")
    func domains() throws {
        let dotted = try #require(parse("a=1; Domain=.Example.COM"))
        #expect(dotted.domain == "example.com" && !dotted.isHostOnly)
        let own = try #require(parse("a=1; Domain=www.example.com"))
        #expect(own.domain == "www.example.com" && !own.isHostOnly)
        #expect(parse("a=1; Domain=")?.isHostOnly == true)
        #expect(parse("a=1; Domain=localhost", host: "localhost")?.isHostOnly == true)
        #expect(parse("a=1; Domain=127.0.0.1", host: "127.0.0.1")?.isHostOnly == true)
        #expect(parse("a=1; Domain=0.0.1", host: "127.0.0.1") == nil)
    }

    @Test(
        "Path defaults to the request path's directory (RFC 6265, section 5.1.4)",
        arguments: [
            ("/a/b/c", "", "/a/b"), ("/a", "", "/"), ("/", "", "/"), ("/a/b/", "", "/a/b"),
            ("/a/b", "; Path=rel", "/a"),
            ("/a/b", "; Path=", "/a"), ("/a/b", "; Path=/x; Path=/y", "/y"),
        ])
    func defaultPath(requestPath: String, attribute: String, expected: String) {
        #expect(parse("a=1" + attribute, path: requestPath)?.path == expected)
    }

    @Test(
        "Expires takes HTTP dates and the Netscape form; an invalid one is ignored",
        arguments: [
            ("Wed, 15 Nov 2023 00:00:00 GMT", 1_700_006_400.0), ("Wednesday, 15-Nov-23 00:00:00 GMT", 1_700_006_400),
            ("Wed Nov 15 00:00:00 2023", 1_700_006_400), ("Wed, 15-Nov-2023 00:00:00 GMT", 1_700_006_400),
        ])
    func expires(text: String, seconds: Double) {
        #expect(parse("a=1; Expires=\(text)")?.expires == Date(timeIntervalSince1970: seconds))
    }

    @Test("an unparsable Expires or Max-Age leaves a session cookie")
    func invalidExpiry() throws {
        for attribute in [
            "Expires=tomorrow", "Expires=Wed, 15 Nov 2023 25:00:00 GMT", "Max-Age=1e3", "Max-Age=", "Max-Age=+5",
        ] {
            let cookie = try #require(parse("a=1; " + attribute))
            #expect(cookie.expires == nil, "\(attribute)")
        }
    }

    @Test("Max-Age wins over Expires in either order; zero or negative expires it")
    func maxAge() {
        let past = "Expires=Thu, 01 Jan 1970 00:00:00 GMT"
        #expect(parse("a=1; Max-Age=60; \(past)")?.expires == now.addingTimeInterval(60))
        #expect(parse("a=1; \(past); Max-Age=60")?.expires == now.addingTimeInterval(60))
        #expect(parse("a=1; Max-Age=0; Expires=Fri, 01 Jan 2100 00:00:00 GMT")?.isExpired(at: now) == true)
        #expect(parse("a=1; Max-Age=-1")?.isExpired(at: now) == true)
        #expect(parse("a=1; \(past)")?.isExpired(at: now) == true)
    }

    @Test("lifetimes are capped at 400 days, huge Max-Age included")
    func cappedLifetime() {
        let cap = now.addingTimeInterval(Cookie.maximumLifetime)
        #expect(parse("a=1; Max-Age=99999999999999999999999")?.expires == cap)
        #expect(parse("a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT")?.expires == cap)
    }

    @Test("domain and path matching (RFC 6265, sections 5.1.3 and 5.1.4)")
    func matching() throws {
        let domain = try #require(parse("a=1; Domain=example.com; Path=/docs"))
        #expect(domain.matches(host: "example.com", path: "/docs", isSecure: false, at: now))
        #expect(domain.matches(host: "a.b.example.com", path: "/docs/x", isSecure: false, at: now))
        #expect(!domain.matches(host: "badexample.com", path: "/docs", isSecure: false, at: now))
        #expect(!domain.matches(host: "example.com", path: "/docsx", isSecure: false, at: now))
        #expect(!domain.matches(host: "example.com", path: "/", isSecure: false, at: now))
        let hostOnly = try #require(parse("a=1; Path=/"))
        #expect(hostOnly.matches(host: "www.example.com", path: "/", isSecure: false, at: now))
        #expect(!hostOnly.matches(host: "x.www.example.com", path: "/", isSecure: false, at: now))
        let secure = try #require(parse("a=1; Secure; Path=/"))
        #expect(!secure.matches(host: "www.example.com", path: "/", isSecure: false, at: now))
        #expect(secure.matches(host: "www.example.com", path: "/", isSecure: true, at: now))
    }

    @Test("random bytes never crash the parser")
    func randomInput() {
        var generator = SeededGenerator(seed: 6265)
        let alphabet = Array("ab=; ,.-/:\"\t\u{0}\u{7F}éDomainPathExpiresMax-Age0123456789SecureGMT".unicodeScalars)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<80, using: &generator)
            var text = ""
            for _ in 0..<length { text.unicodeScalars.append(alphabet.randomElement(using: &generator)!) }
            if let cookie = parse(text, host: "example.com", path: "/p") {
                #expect(!cookie.name.isEmpty && cookie.path.hasPrefix("/"))
            }
        }
    }

    @Test("descriptions and mirrors never show the value")
    func redactedDescriptions() throws {
        let cookie = try #require(parse("sid=TOPSECRET; Path=/"))
        var dumped = ""
        dump(cookie, to: &dumped)
        for text in ["\(cookie)", String(reflecting: cookie), dumped, "\([cookie])"] {
            #expect(!text.contains("TOPSECRET") && text.contains("sid"), "\(text)")
        }
    }
}
