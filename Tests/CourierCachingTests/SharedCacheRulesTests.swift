import CourierCaching
import Foundation
import Testing

/// A shared cache's rules (RFC 9111), as the tier a fleet shares reads them: `s-maxage` over
/// `max-age`, `proxy-revalidate`, and what it may keep at all.
@Suite("HTTP cache rules for a shared cache")
struct SharedCacheRulesTests {
    let sent = Date(timeIntervalSince1970: 1_700_000_000)

    func entry(_ control: String) -> CachedResponse {
        var fields = HTTPFields()
        fields[.cacheControl] = control
        fields[.date] = HTTPDate.format(sent)
        fields[.eTag] = #""v1""#
        return CachedResponse(
            status: .ok, headerFields: fields, body: Data("x".utf8), requestTime: sent, responseTime: sent)
    }

    func request(_ fields: [HTTPField.Name: String] = [:]) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/a")
        for (name, value) in fields { request.headerFields[name] = value }
        return request
    }

    @Test("s-maxage sets a shared cache's lifetime, and only a shared cache's")
    func sharedMaxAge() {
        let both = entry("max-age=60, s-maxage=5")
        #expect(HTTPCacheRules.freshnessLifetime(of: both) == 60)
        #expect(HTTPCacheRules.freshnessLifetime(of: both, shared: true) == 5)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry("max-age=60"), shared: true) == 60)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry("s-maxage=5, s-maxage=7"), shared: true) == 5)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry("max-age=60, s-maxage=abc"), shared: true) == 0)
        let later = sent + 10
        #expect(HTTPCacheRules.decide(both, for: request(), now: later) == .fresh)
        #expect(HTTPCacheRules.decide(both, for: request(), now: later, shared: true) == .revalidate)
    }

    @Test("proxy-revalidate and s-maxage forbid a shared cache to serve stale; a private one may")
    func proxyRevalidate() {
        let later = sent + 10
        let maxStale = request([.cacheControl: "max-stale=60"])
        for control in ["max-age=5, proxy-revalidate", "s-maxage=5"] {
            let stored = entry(control + ", stale-if-error=60, stale-while-revalidate=60")
            #expect(HTTPCacheRules.decide(stored, for: maxStale, now: later, shared: true) == .revalidate, "\(control)")
            #expect(!HTTPCacheRules.mayServeOnError(stored, now: later, shared: true), "\(control)")
        }
        let proxy = entry("max-age=5, proxy-revalidate, stale-if-error=60")
        #expect(HTTPCacheRules.decide(proxy, for: maxStale, now: later) == .fresh, "served stale, as asked")
        #expect(HTTPCacheRules.mayServeOnError(proxy, now: later))
    }

    @Test("a shared cache never keeps private responses, nor answers to Authorization unless they allow it")
    func sharedStorage() {
        let plain = request()
        let authorized = request([.authorization: "Bearer token"])
        #expect(HTTPCacheRules.sharedMayStore(request: plain, responseFields: entry("max-age=60").headerFields))
        #expect(
            !HTTPCacheRules.sharedMayStore(request: plain, responseFields: entry("private, max-age=60").headerFields))
        #expect(
            !HTTPCacheRules.sharedMayStore(
                request: plain, responseFields: entry(#"private="Set-Cookie", max-age=60"#).headerFields))
        #expect(!HTTPCacheRules.sharedMayStore(request: authorized, responseFields: entry("max-age=60").headerFields))
        for allowing in ["public, max-age=60", "s-maxage=60", "max-age=60, must-revalidate"] {
            #expect(
                HTTPCacheRules.sharedMayStore(request: authorized, responseFields: entry(allowing).headerFields),
                "\(allowing)")
        }
    }
}
