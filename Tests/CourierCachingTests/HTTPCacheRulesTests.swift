import CourierCaching
import Foundation
import Testing

@Suite("HTTP cache rules (RFC 9111)")
struct HTTPCacheRulesTests {
    let sent = Date(timeIntervalSince1970: 1_700_000_000)

    func entry(_ fields: [String: String], status: HTTPResponse.Status = .ok, delay: TimeInterval = 0) -> CachedResponse
    {
        var headers = HTTPFields()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { headers[HTTPField.Name(name)!] = value }
        return CachedResponse(
            status: status, headerFields: headers, body: Data("x".utf8), requestTime: sent, responseTime: sent + delay)
    }

    func request(_ fields: [String: String] = [:]) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/a")
        for (name, value) in fields { request.headerFields[HTTPField.Name(name)!] = value }
        return request
    }

    @Test("Cache-Control: case, quotes, commas in quotes, first duplicate wins, invalid seconds")
    func parsesCacheControl() {
        let control = CacheControl(#"Max-Age=60, no-cache="Set-Cookie, X", private, max-age=5, s-maxage=abc"#)
        #expect(control.maxAge == .seconds(60))
        #expect(control.directives["no-cache"] == .some("Set-Cookie, X"))
        #expect(control.contains("private"))
        #expect(control.seconds("s-maxage") == .invalid)
        #expect(CacheControl("max-age=99999999999").maxAge == .seconds(2_147_483_648))
        #expect(CacheControl("max-age=-1").maxAge == .invalid)
        #expect(CacheControl("max-age=\"30\"").maxAge == .seconds(30))
        #expect(CacheControl("").directives.isEmpty)
    }

    @Test("freshness: max-age beats Expires; Expires minus Date; invalid Expires is already expired")
    func freshnessLifetime() {
        let date = HTTPDate.format(sent)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Cache-Control": "max-age=60", "Expires": "0"])) == 60)
        let expires = HTTPDate.format(sent + 300)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Date": date, "Expires": expires])) == 300)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Date": date, "Expires": "0"])) == 0)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Expires": "yesterday"])) == 0)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Cache-Control": "max-age=soon"])) == 0)
        // Heuristic: 10% of the time since Last-Modified, for heuristically cacheable statuses only.
        let lastModified = HTTPDate.format(sent - 10_000)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Date": date, "Last-Modified": lastModified])) == 1_000)
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(["Last-Modified": lastModified], status: 302)) == 0)
    }

    @Test("age: Age header plus the round trip plus time resident")
    func currentAge() {
        let stored = entry(["Cache-Control": "max-age=100", "Age": "30", "Date": HTTPDate.format(sent)], delay: 2)
        #expect(HTTPCacheRules.currentAge(of: stored, now: sent + 2) == 32)
        #expect(HTTPCacheRules.currentAge(of: stored, now: sent + 12) == 42)
        #expect(HTTPCacheRules.freshness(of: stored, now: sent + 69.9).isFresh)
        #expect(!HTTPCacheRules.freshness(of: stored, now: sent + 70).isFresh)
        // A Date far in the past makes the apparent age count.
        let old = entry(["Date": HTTPDate.format(sent - 500), "Cache-Control": "max-age=100"])
        #expect(HTTPCacheRules.currentAge(of: old, now: sent) == 500)
        // An invalid Age is ignored.
        #expect(HTTPCacheRules.currentAge(of: entry(["Age": "-3"]), now: sent + 1) == 1)
    }

    @Test("decisions: fresh, no-cache, stale-while-revalidate, must-revalidate, validators")
    func decisions() {
        let now = sent + 70
        #expect(HTTPCacheRules.decide(entry(["Cache-Control": "max-age=100"]), for: request(), now: now) == .fresh)
        #expect(
            HTTPCacheRules.decide(
                entry(["Cache-Control": "max-age=100, no-cache", "ETag": "\"v\""]), for: request(), now: now)
                == .revalidate)
        #expect(
            HTTPCacheRules.decide(
                entry(["Cache-Control": "max-age=100"]), for: request(["Cache-Control": "no-cache"]), now: now)
                == .unusable)
        #expect(
            HTTPCacheRules.decide(
                entry(["Cache-Control": "max-age=60, stale-while-revalidate=30"]), for: request(), now: now)
                == .staleWhileRevalidate)
        #expect(
            HTTPCacheRules.decide(
                entry(["Cache-Control": "max-age=60, stale-while-revalidate=30, must-revalidate"]), for: request(),
                now: now)
                == .unusable)
        #expect(
            HTTPCacheRules.decide(
                entry(["Cache-Control": "max-age=60", "Last-Modified": "x"]), for: request(), now: now)
                == .revalidate)
    }

    @Test("a qualified no-cache serves without revalidation, without the fields it names")
    func qualifiedNoCache() {
        let now = sent + 70
        let stored = entry([
            "Cache-Control": #"max-age=100, no-cache="Set-Cookie, X-Session""#, "Set-Cookie": "id=1",
            "X-Session": "s", "Content-Type": "text/plain", "ETag": "\"v\"",
        ])
        #expect(HTTPCacheRules.decide(stored, for: request(), now: now) == .fresh)
        let served = HTTPCacheRules.unvalidated(stored)
        #expect(served.headerFields[.setCookie] == nil && served.headerFields[HTTPField.Name("X-Session")!] == nil)
        #expect(served.headerFields[.contentType] == "text/plain" && served.body == stored.body)
        // Unqualified, or qualified by nothing: revalidate every time, and nothing is removed.
        for plain in ["max-age=100, no-cache", #"max-age=100, no-cache="""#] {
            let entry = entry(["Cache-Control": plain, "Set-Cookie": "id=1", "ETag": "\"v\""])
            #expect(HTTPCacheRules.decide(entry, for: request(), now: now) == .revalidate)
            #expect(HTTPCacheRules.unvalidated(entry).headerFields[.setCookie] == "id=1")
        }
    }

    @Test("stale-if-error: within the window, never with must-revalidate")
    func staleIfError() {
        #expect(
            HTTPCacheRules.mayServeOnError(entry(["Cache-Control": "max-age=10, stale-if-error=60"]), now: sent + 69))
        #expect(
            !HTTPCacheRules.mayServeOnError(entry(["Cache-Control": "max-age=10, stale-if-error=60"]), now: sent + 71))
        #expect(
            !HTTPCacheRules.mayServeOnError(
                entry(["Cache-Control": "max-age=10, stale-if-error=60, must-revalidate"]), now: sent + 20))
        #expect(!HTTPCacheRules.mayServeOnError(entry(["Cache-Control": "max-age=10"]), now: sent + 20))
    }

    @Test("what may be stored")
    func storability() {
        func response(_ status: Int, _ fields: [String: String] = [:]) -> HTTPResponse {
            var head = HTTPResponse(status: .init(code: status))
            for (name, value) in fields { head.headerFields[HTTPField.Name(name)!] = value }
            return head
        }
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(200)))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(200, ["Cache-Control": "no-store"])))
        #expect(!HTTPCacheRules.isStorable(request: request(["Cache-Control": "no-store"]), response: response(200)))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(200, ["Vary": "*"])))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(206)))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(500)))
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(500, ["Cache-Control": "max-age=5"])))
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(302, ["ETag": "\"a\""])))
        // must-understand: a status whose rules the cache implements overrides no-store; any
        // other status is never stored, even with explicit freshness (section 5.2.2.3).
        let understood = ["Cache-Control": "max-age=3600, no-store, must-understand"]
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(200, understood)))
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(404, understood)))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(599, understood)))
        #expect(
            !HTTPCacheRules.isStorable(
                request: request(), response: response(299, ["Cache-Control": "max-age=60, must-understand"])))
        #expect(HTTPCacheRules.isStorable(request: request(), response: response(299, ["Cache-Control": "max-age=60"])))
        #expect(
            !HTTPCacheRules.isStorable(
                request: request(["Cache-Control": "no-store"]), response: response(200, understood)))
        #expect(!HTTPCacheRules.isStorable(request: request(), response: response(416, understood)))
        // Only .http() reads must-understand: the other policies keep no-store.
        #expect(!HTTPCacheRules.mayStore(request: request(), response: response(200, understood)))
        var post = request()
        post.method = .post
        #expect(!HTTPCacheRules.isStorable(request: post, response: response(200, ["Cache-Control": "max-age=5"])))
        #expect(HTTPCacheRules.invalidates(method: .post, status: 201))
        #expect(!HTTPCacheRules.invalidates(method: .post, status: 500))
        #expect(!HTTPCacheRules.invalidates(method: .get, status: 200))
    }

    @Test("a 304 replaces the fields it carries and keeps the body")
    func freshening() {
        let stored = entry(["ETag": "\"v1\"", "Cache-Control": "max-age=10", "X-Kept": "yes", "Content-Length": "1"])
        var notModified = HTTPResponse(status: .notModified)
        notModified.headerFields[.cacheControl] = "max-age=99"
        notModified.headerFields[.contentLength] = "0"
        let updated = HTTPCacheRules.freshened(
            stored, with: notModified, requestTime: sent + 50, responseTime: sent + 51)
        #expect(updated.body == stored.body)
        #expect(updated.headerFields[.cacheControl] == "max-age=99")
        #expect(updated.headerFields[HTTPField.Name("X-Kept")!] == "yes")
        #expect(updated.headerFields[.contentLength] == "1")
        #expect(updated.responseTime == sent + 51)
        #expect(HTTPCacheRules.conditionalFields(for: stored)[.ifNoneMatch] == "\"v1\"")
    }

    @Test("Vary selects on hashed request values; Vary: * never matches")
    func vary() {
        let fields: HTTPFields = [.vary: "Accept-Language, Authorization"]
        let english = request(["Accept-Language": "en", "Authorization": "Bearer secret"])
        var stored = entry(["Vary": "Accept-Language, Authorization"])
        stored.variant = HTTPCacheRules.variant(of: english, responseFields: fields)
        #expect(stored.variant?.contains("secret") == false)
        #expect(HTTPCacheRules.matchesVariant(stored, request: english))
        #expect(
            !HTTPCacheRules.matchesVariant(
                stored, request: request(["Accept-Language": "fr", "Authorization": "Bearer secret"])))
        #expect(!HTTPCacheRules.matchesVariant(stored, request: request(["Accept-Language": "en"])))
        #expect(HTTPCacheRules.matchesVariant(entry([:]), request: english))
        #expect(!HTTPCacheRules.matchesVariant(entry(["Vary": "*"]), request: english))
    }

    @Test("keys carry a credential digest, never the credential")
    func keys() {
        var request = request()
        request.path = "/a?token=q"
        let anonymous = CacheKey(request: request, credentialHeaders: [.authorization, .cookie])
        request.headerFields[.authorization] = "Bearer alice-secret"
        let alice = CacheKey(request: request, credentialHeaders: [.authorization, .cookie])
        request.headerFields[.authorization] = "Bearer bob-secret"
        let bob = CacheKey(request: request, credentialHeaders: [.authorization, .cookie])
        #expect(Set([anonymous, alice, bob]).count == 3)
        #expect(!alice.rawValue.contains("alice-secret"))
        #expect(alice.description == "GET https://example.com/a")
        #expect(alice.digest.count == 64)
    }
}
