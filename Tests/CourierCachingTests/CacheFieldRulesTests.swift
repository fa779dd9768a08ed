import CourierCaching
import Foundation
import Testing

@Suite("Age, max-age, Connection, ranges, HEAD and invalidation targets (RFC 9111)")
struct CacheFieldRulesTests {
    let sent = Date(timeIntervalSince1970: 1_700_000_000)

    func entry(_ fields: [(String, String)], body: String = "0123456789") -> CachedResponse {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return CachedResponse(
            status: 200, headerFields: headers, body: Data(body.utf8), requestTime: sent, responseTime: sent)
    }

    @Test("Age: the first member of a list or of several lines, without parameters; an invalid one is ignored")
    func age() {
        #expect(HTTPCacheRules.ageValue(of: entry([("Age", "7200, 0")]).headerFields) == 7200)
        #expect(HTTPCacheRules.ageValue(of: entry([("Age", "7200"), ("Age", "0")]).headerFields) == 7200)
        #expect(HTTPCacheRules.ageValue(of: entry([("Age", " 30 ")]).headerFields) == 30)
        // Parameters are dropped, not a reason to ignore the field (which would make a stale
        // response look fresh).
        #expect(HTTPCacheRules.ageValue(of: entry([("Age", "7200;foo=bar")]).headerFields) == 7200)
        #expect(HTTPCacheRules.ageValue(of: entry([("Age", "7200 ; a=1, 5")]).headerFields) == 7200)
        let parameterised = entry([("Age", "7200;foo=bar"), ("Cache-Control", "max-age=3600")])
        #expect(!HTTPCacheRules.freshness(of: parameterised, now: sent).isFresh)
        for invalid in ["30s", "1.5", "-3", "", ", 5", "abc", ";a=1"] {
            #expect(HTTPCacheRules.ageValue(of: entry([("Age", invalid)]).headerFields) == nil)
        }
        #expect(HTTPCacheRules.currentAge(of: entry([("Age", "7200, 0")]), now: sent + 1) == 7201)
    }

    /// One rule per way a server writes `max-age`, kept stable (the Caching article's table):
    /// the `Cache-Control` lines and the lifetime in seconds they give, 0 meaning stale.
    static let maxAgeCases: [([String], Double)] = [
        (["max-age=1800, max-age=1"], 1800.0), (["max-age=1800", "max-age=1"], 1800),
        (["max-age=1, max-age=1800"], 1), (["max-age=1", "max-age=1800"], 1),
        (["extension=\"max-age=3600\", max-age=1"], 1), (["max-age=1, extension=\"max-age=3600\""], 1),
        (["max-age=\"3600\""], 3600), (["max-age =3600"], 0), (["max-age= 3600"], 0), (["max-age=003600"], 3600),
        (["max-age='3600'"], 0), (["max-age=3600.0"], 0), (["max-age=3600.5"], 0), (["max-age=a3600"], 0),
        (["max-age=3600a"], 0), (["max-age=-1"], 0), (["max-age="], 0), (["max-age"], 0),
        (["MAX-AGE=60"], 60), (["max-age=60, max-age = 10"], 60), (["max-age=99999999999999999999"], 2_147_483_648),
    ]

    @Test("every way of writing max-age has one documented reading", arguments: maxAgeCases)
    func maxAgeReadings(fields: [String], lifetime: Double) {
        #expect(HTTPCacheRules.freshnessLifetime(of: entry(fields.map { ("Cache-Control", $0) })) == lifetime)
    }

    @Test("max-age: spaces around = and decimals are invalid; quoted is fine; of two, the first counts")
    func maxAge() {
        #expect(CacheControl("max-age = 60").maxAge == .invalid)
        #expect(CacheControl("max-age =60").maxAge == .invalid)
        #expect(CacheControl("max-age=60.0").maxAge == .invalid)
        #expect(CacheControl("max-age=\"60\"").maxAge == .seconds(60))
        #expect(CacheControl("max-age=60, max-age=10").maxAge == .seconds(60))
        #expect(HTTPCacheRules.freshnessLifetime(of: entry([("Cache-Control", "max-age=60, max-age=10")])) == 60)
        #expect(
            HTTPCacheRules.freshnessLifetime(
                of: entry([("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=60")])) == 60)
        let date = HTTPDate.format(sent)
        let later = HTTPDate.format(sent + 60)
        #expect(
            HTTPCacheRules.freshnessLifetime(of: entry([("Date", date), ("Expires", later), ("Expires", date)])) == 0)
    }

    @Test("fields named in Connection and hop-by-hop fields are not stored, nor merged from a 304")
    func connection() {
        var head = HTTPResponse(status: .ok)
        head.headerFields.append(HTTPField(name: .connection, value: "X-A, x-b"))
        for name in ["X-A", "X-B", "X-C", "Keep-Alive"] { head.headerFields[HTTPField.Name(name)!] = "1" }
        let stored = HTTPCacheRules.storedFields(of: head)
        #expect(stored.map(\.name.rawName) == ["X-C"])
        let merged = HTTPCacheRules.freshened(entry([]), with: head, requestTime: sent, responseTime: sent)
        #expect(merged.headerFields.map(\.name.rawName) == ["X-C"])
    }

    @Test("byte ranges the cache answers, and those it leaves to the server")
    func ranges() {
        #expect(HTTPCacheRules.byteRange("bytes=0-3", length: 10) == .init(first: 0, last: 3))
        #expect(HTTPCacheRules.byteRange("bytes=8-20", length: 10) == .init(first: 8, last: 9))
        #expect(HTTPCacheRules.byteRange("Bytes=7-", length: 10) == .init(first: 7, last: 9))
        #expect(HTTPCacheRules.byteRange("bytes=-3", length: 10) == .init(first: 7, last: 9))
        #expect(HTTPCacheRules.byteRange("bytes=-30", length: 10) == .init(first: 0, last: 9))
        for refused in [
            "bytes=10-", "bytes=5-2", "bytes=-0", "bytes=0-1,3-4", "items=0-1", "bytes=a-b", "bytes=", "0-1",
        ] {
            #expect(HTTPCacheRules.byteRange(refused, length: 10) == nil)
        }
        let part = HTTPCacheRules.partial(entry([]), range: "bytes=2-4")
        #expect(part?.status == 206 && part?.body == Data("234".utf8))
        #expect(part?.headerFields[.contentRange] == "bytes 2-4/10")
    }

    @Test("a 206 is kept as a part with one strong ETag and one Content-Range of known length; parts combine")
    func storedParts() throws {
        func part(_ range: String, _ body: String, eTag: String = "\"v1\"") -> CachedResponse {
            var response = entry([("ETag", eTag), ("Content-Range", range)], body: body)
            response.status = .partialContent
            return response
        }
        let first = part("bytes 0-3/10", "0123")
        #expect(HTTPCacheRules.storedPart(first)?.range == .init(first: 0, last: 3))
        #expect(HTTPCacheRules.storedPart(first)?.length == 10)
        for refused in [
            part("bytes 0-3/10", "0123", eTag: "W/\"v1\""), part("bytes 0-3/*", "0123"), part("bytes 0-3/10", "012"),
            part("bytes 3-0/10", "0123"), part("bytes 0-10/10", "0123"), part("items 0-3/10", "0123"),
            entry([("ETag", "\"v1\"")], body: "0123"),
        ] {
            #expect(HTTPCacheRules.storedPart(refused) == nil)
            #expect(HTTPCacheRules.combined(refused, with: first) == nil)
        }
        var twoRanges = part("bytes 0-3/10", "0123")
        twoRanges.headerFields.append(HTTPField(name: .contentRange, value: "bytes 4-7/10"))
        #expect(HTTPCacheRules.storedPart(twoRanges) == nil)

        // The part answers the ranges it holds, nothing else.
        #expect(HTTPCacheRules.partial(first, range: "bytes=1-2")?.body == Data("12".utf8))
        #expect(HTTPCacheRules.partial(first, range: "bytes=1-2")?.headerFields[.contentRange] == "bytes 1-2/10")
        #expect(HTTPCacheRules.partial(first, range: "bytes=2-5") == nil)
        #expect(HTTPCacheRules.partial(part("bytes 6-9/10", "6789"), range: "bytes=-3")?.body == Data("789".utf8))

        // Touching or overlapping parts of one version combine; the whole is a 200.
        let middle = try #require(HTTPCacheRules.combined(part("bytes 4-6/10", "456"), with: first))
        #expect(middle.status == .partialContent && middle.body == Data("0123456".utf8))
        #expect(middle.headerFields[.contentRange] == "bytes 0-6/10")
        let whole = try #require(HTTPCacheRules.combined(part("bytes 5-9/10", "56789"), with: middle))
        #expect(whole.status == .ok && whole.body == Data("0123456789".utf8))
        #expect(whole.headerFields[.contentRange] == nil && whole.headerFields[.contentLength] == "10")
        // A gap, another version or another length: the new part alone.
        for (other, stored) in [
            (part("bytes 6-9/10", "6789"), first), (part("bytes 4-6/10", "456", eTag: "\"v2\""), first),
            (part("bytes 4-6/11", "456"), first),
        ] {
            #expect(HTTPCacheRules.combined(other, with: stored) == other)
        }
        // The whole stored already: nothing to store.
        #expect(HTTPCacheRules.combined(first, with: entry([("ETag", "\"v1\"")])) == nil)
    }

    @Test("a HEAD's 200 updates the stored GET only when its validators and length agree")
    func head() {
        let stored = entry([("ETag", "\"a\""), ("Cache-Control", "max-age=0")])
        func head(_ fields: [HTTPField.Name: String]) -> HTTPResponse {
            var response = HTTPResponse(status: .ok)
            for (name, value) in fields { response.headerFields[name] = value }
            return response
        }
        let updated = HTTPCacheRules.freshened(
            stored, withHead: head([.eTag: "\"a\"", .contentLength: "10", .cacheControl: "max-age=9"]),
            requestTime: sent,
            responseTime: sent + 5)
        #expect(updated?.headerFields[.cacheControl] == "max-age=9" && updated?.body == stored.body)
        #expect(updated?.responseTime == sent + 5)
        #expect(
            HTTPCacheRules.freshened(stored, withHead: head([.eTag: "\"b\""]), requestTime: sent, responseTime: sent)
                == nil)
        #expect(
            HTTPCacheRules.freshened(
                stored, withHead: head([.contentLength: "11"]), requestTime: sent, responseTime: sent) == nil)
        #expect(
            HTTPCacheRules.freshened(
                stored, withHead: head([.lastModified: "x"]), requestTime: sent, responseTime: sent) == nil)
    }

    @Test("Location and Content-Location: same-origin absolute, network-path, absolute-path and relative references")
    func invalidationTargets() {
        let request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/items?x=1")
        func targets(_ location: String) -> [String?] {
            var response = HTTPResponse(status: .created)
            response.headerFields[.location] = location
            return HTTPCacheRules.invalidatedRequests(after: request, response: response).map(\.path)
        }
        #expect(targets("https://API.example.com/v1/items/7#top") == ["/v1/items?x=1", "/v1/items/7"])
        #expect(targets("//api.example.com/a") == ["/v1/items?x=1", "/a"])
        #expect(targets("/v1/items/8") == ["/v1/items?x=1", "/v1/items/8"])
        #expect(targets("items/9") == ["/v1/items?x=1", "/v1/items/9"])
        #expect(targets("?page=2") == ["/v1/items?x=1", "/v1/items?page=2"])
        #expect(targets("http://api.example.com/v1/items/7") == ["/v1/items?x=1"])
        #expect(targets("https://other.example.com/v1/items/7") == ["/v1/items?x=1"])
        #expect(
            HTTPCacheRules.invalidatedRequests(after: request, response: HTTPResponse(status: .ok)).map(\.method) == [
                .get
            ])
    }
}
