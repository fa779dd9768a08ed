import CourierCore
import CourierServices
import Foundation
import Testing

typealias Cookie = CookieJar.Cookie

/// A wall clock tests move by hand.
final class ManualWallClock: Sendable {
    private let time = LockedValue(Date(timeIntervalSince1970: 1_700_000_000))
    var now: Date { time.withLock { $0 } }
    func advance(by seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

func cookieRequest(_ url: String) -> HTTPRequest {
    let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
    return HTTPRequest(
        method: .get, scheme: String(parts[0].dropLast()), authority: String(parts[2]),
        path: parts.count > 3 ? "/" + parts[3] : "/")
}

/// The jar: storage, replacement, deletion, expiry, ordering and limits.
@Suite("Cookie jar")
struct CookieJarTests {
    let clock = ManualWallClock()
    let jar: CookieJar

    init() {
        let clock = clock
        jar = CookieJar(now: { clock.now })
    }

    func header(_ url: String) -> String? { jar.cookieHeader(for: cookieRequest(url)) }

    @Test("stored cookies come back for matching requests only")
    func storeAndMatch() {
        jar.store(
            setCookie: ["a=1; Path=/", "b=2; Domain=example.com; Path=/docs", "bad"],
            for: cookieRequest("http://www.example.com:8080/x"))
        #expect(jar.count == 2)
        #expect(header("http://www.example.com/docs/page") == "b=2; a=1")
        #expect(header("http://www.example.com/") == "a=1")
        #expect(header("http://api.example.com/docs") == "b=2")
        #expect(header("http://example.org/docs") == nil)
    }

    @Test("longer paths first, then earlier creation (RFC 6265, section 5.4)")
    func ordering() {
        let request = cookieRequest("https://example.com/a/b/c")
        jar.store(setCookie: ["late=1; Path=/"], for: request)
        clock.advance(by: 1)
        jar.store(setCookie: ["deep=1; Path=/a/b", "mid=1; Path=/a", "later=1; Path=/"], for: request)
        clock.advance(by: 1)
        jar.store(setCookie: ["late=2; Path=/"], for: request)  // replaced: keeps its creation time
        #expect(header("https://example.com/a/b/c") == "deep=1; mid=1; late=2; later=1")
    }

    @Test("Max-Age=0 deletes; an expired cookie is neither sent nor kept")
    func expiry() {
        let request = cookieRequest("http://example.com/")
        jar.store(setCookie: ["a=1", "b=2; Max-Age=60", "c=3; Expires=Tue, 14 Nov 2023 22:14:20 GMT"], for: request)
        #expect(header("http://example.com/") == "a=1; b=2; c=3")
        jar.store(setCookie: ["a=gone; Max-Age=0"], for: request)
        #expect(header("http://example.com/") == "b=2; c=3")
        clock.advance(by: 60)
        #expect(header("http://example.com/") == nil)
        #expect(jar.count == 0)
    }

    @Test("http never replaces a Secure cookie; https does")
    func secureIsLeftAlone() {
        jar.store(setCookie: ["sid=secure; Secure; Path=/"], for: cookieRequest("https://example.com/"))
        jar.store(setCookie: ["sid=plain; Path=/"], for: cookieRequest("http://example.com/"))
        #expect(header("https://example.com/") == "sid=secure")
        #expect(header("http://example.com/") == nil)
        jar.store(setCookie: ["sid=new; Secure; Path=/"], for: cookieRequest("https://example.com/"))
        #expect(header("https://example.com/") == "sid=new")
    }

    @Test("past 50 per domain, the least recently used cookie goes first")
    func perDomainLimit() {
        let request = cookieRequest("http://example.com/")
        jar.store(setCookie: (0..<50).map { "c\($0)=\($0)" }, for: request)
        clock.advance(by: 1)
        jar.insert(Cookie(name: "c0", value: "used", domain: "example.com", created: clock.now))  // touches c0
        clock.advance(by: 1)
        jar.store(setCookie: ["new=1"], for: request)
        let names = Set(jar.allCookies.map(\.name))
        #expect(jar.count == 50 && names.contains("c0") && names.contains("new") && !names.contains("c1"))
        jar.store(setCookie: ["other=1"], for: cookieRequest("http://example.org/"))
        #expect(jar.count == 51)
    }

    @Test("past the total limit, the least recently used cookie of any domain goes")
    func totalLimit() {
        let clock = clock
        let small = CookieJar(limits: .init(perDomain: 50, total: 3), now: { clock.now })
        for host in ["a.test", "b.test", "c.test"] {
            small.store(setCookie: ["k=\(host)"], for: cookieRequest("http://\(host)/"))
            clock.advance(by: 1)
        }
        _ = small.cookies(for: cookieRequest("http://a.test/"))  // a.test becomes recently used
        clock.advance(by: 1)
        small.store(setCookie: ["k=d"], for: cookieRequest("http://d.test/"))
        #expect(small.count == 3)
        #expect(Set(small.allCookies.map(\.domain)) == ["a.test", "c.test", "d.test"])
        #expect(CookieJar(limits: .init()).limits == .init(perDomain: 50, total: 3000))
    }

    @Test("3000 cookies across domains stay at the cap and lookups stay correct")
    func defaultTotalCap() {
        for domain in 0..<70 {
            jar.store(setCookie: (0..<50).map { "n\($0)=v" }, for: cookieRequest("http://d\(domain).test/"))
            clock.advance(by: 1)
        }
        #expect(jar.count == 3000)
        #expect(jar.cookies(for: cookieRequest("http://d69.test/")).count == 50)
    }

    @Test("IPv6 and ported hosts, and the jar's description shows no value")
    func hostsAndDescription() {
        jar.store(setCookie: ["v6=SECRET"], for: cookieRequest("http://[::1]:8080/"))
        #expect(header("http://[::1]:9090/") == "v6=SECRET")
        #expect(!"\(jar)".contains("SECRET") && "\(jar)".contains("1"))
        let jars = CookieJar.Partitioned()
        jars.jar(for: "alice").store(setCookie: ["x=SECRET"], for: cookieRequest("http://a.test/"))
        #expect(!"\(jars)".contains("SECRET") && !"\(jars)".contains("alice"))
        #expect(jars.existingJar(for: "bob") == nil && jars.count == 1)
        jars.removeJar(for: "alice")
        #expect(jars.count == 0)
        jar.removeAll()
        #expect(jar.count == 0)
    }
}
