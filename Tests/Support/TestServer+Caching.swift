import CourierCaching
import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// A route for the caching tests, with the HTTP caching headers a test asks for:
///
/// `/cache?key=&cc=&etag=1&lm=1&vary=&expires=&age=&date=`
///
/// - `cc`: the `Cache-Control` value; `vary`, `expires`, `age`: sent as given; `date`: sent as
///   given (default: the server's current time; `none`: no `Date`, so a test's injected clock
///   is the only clock).
/// - `etag=1`: `ETag: "v<version>"`; a matching `If-None-Match` gets 304.
/// - `lm=1`: `Last-Modified` a day before the version was set; an `If-Modified-Since` at or after
///   it gets 304.
/// - `sk`: the `Surrogate-Key` value (tags a purge names).
/// - `age2`: a second `Age` line; `hop=1`: `Connection: X-Hop` and `X-Hop: yes`; `loc`,
///   `cloc`: `Location` and `Content-Location`, as given.
/// - `range=1`: a `Range: bytes=a-b` (or `a-`) gets a 206 with `Content-Range`; `stable=1`
///   leaves `served` out of the body, so that parts of one version fit together.
/// - `delayMs`: a 200 goes out after that many milliseconds.
/// - A `HEAD` gets the `GET`'s head with its `Content-Length` and no body.
/// - The body is `{"key": key, "version": v, "served": n, "lang": Accept-Language}`.
///
/// Tests change a key's version with `setCacheVersion`, make it fail with `failCacheKey`, and
/// read how often it was asked with `cacheCounts`.
extension TestServer {
    struct CacheRouteState {
        var version = 1
        var requests = 0
        var notModified = 0
        var failure: Int?
        var cacheControl: String?
        var lastModified = Date(timeIntervalSince1970: 1_700_000_000)
    }

    /// Requests `/cache?key=<key>` received, and how many were answered 304.
    public func cacheCounts(_ key: String) -> (requests: Int, notModified: Int) {
        cacheRoutes.withLock { ($0[key]?.requests ?? 0, $0[key]?.notModified ?? 0) }
    }

    /// Makes `/cache?key=<key>` serve `version` (a new ETag and Last-Modified).
    public func setCacheVersion(_ key: String, _ version: Int) {
        cacheRoutes.withLock { routes in
            routes[key, default: CacheRouteState()].version = version
            routes[key]!.lastModified = Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 86_400)
        }
    }

    /// Makes `/cache?key=<key>` send `value` as `Cache-Control`, whatever the query says
    /// (nil: the query's `cc` again). 304s carry it too.
    public func setCacheControl(_ key: String, _ value: String?) {
        cacheRoutes.withLock { $0[key, default: CacheRouteState()].cacheControl = value }
    }

    /// Makes `/cache?key=<key>` answer `status` (nil: answer normally again; 0: close the
    /// connection without an answer, as a server that went away mid-request).
    public func failCacheKey(_ key: String, status: Int?) {
        cacheRoutes.withLock { $0[key, default: CacheRouteState()].failure = status }
    }

    func cachingRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        guard request.path == "/cache" else { return false }
        let key = request.query("key") ?? "default"
        let state = cacheRoutes.withLock { routes in
            routes[key, default: CacheRouteState()].requests += 1
            return routes[key]!
        }
        if state.failure == 0 {
            out.close()
            return true
        }
        if let failure = state.failure {
            var headers = [("Content-Type", "text/plain")]
            if let cc = state.cacheControl { headers.append(("Cache-Control", cc)) }
            if request.query("lm") == "1" {
                headers.append(("Last-Modified", httpDate(state.lastModified.addingTimeInterval(-86_400))))
            }
            out.send(failure, "Failing", headers: headers, body: Array("failing on purpose".utf8))
            return true
        }
        let etag = "\"v\(state.version)\""
        let lastModified = httpDate(state.lastModified.addingTimeInterval(-86_400))
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if request.query("date") != "none" { headers.append(("Date", request.query("date") ?? httpDate(Date()))) }
        if let cc = state.cacheControl ?? request.query("cc") { headers.append(("Cache-Control", cc)) }
        if let vary = request.query("vary") { headers.append(("Vary", vary)) }
        if let expires = request.query("expires") { headers.append(("Expires", expires)) }
        if let age = request.query("age") { headers.append(("Age", age)) }
        if let age = request.query("age2") { headers.append(("Age", age)) }
        if request.query("hop") == "1" { headers += [("Connection", "X-Hop"), ("X-Hop", "yes")] }
        if let location = request.query("loc") { headers.append(("Location", location)) }
        if let location = request.query("cloc") { headers.append(("Content-Location", location)) }
        if let tags = request.query("sk") { headers.append(("Surrogate-Key", tags)) }
        if request.query("etag") == "1" { headers.append(("ETag", etag)) }
        if request.query("lm") == "1" { headers.append(("Last-Modified", lastModified)) }

        let ifNoneMatch = request.head.headers.first(name: "If-None-Match")
        let ifModifiedSince = request.head.headers.first(name: "If-Modified-Since")
        let etagMatches = request.query("etag") == "1" && ifNoneMatch == etag
        let notModifiedSince =
            ifNoneMatch == nil && request.query("lm") == "1"
            && ifModifiedSince.flatMap(parseHTTPDate).map {
                $0 >= state.lastModified.addingTimeInterval(-86_400)
            } == true
        if etagMatches || notModifiedSince {
            cacheRoutes.withLock { $0[key]!.notModified += 1 }
            out.send(304, "Not Modified", headers: headers.filter { $0.0 != "Content-Type" }, body: [])
            return true
        }
        let language = request.head.headers.first(name: "Accept-Language") ?? ""
        let served = request.query("stable") == "1" ? "" : #","served":\#(state.requests)"#
        let body = Array(#"{"key":"\#(key)","version":\#(state.version)\#(served),"lang":"\#(language)"}"#.utf8)
        if request.head.method == .HEAD {
            out.send(200, headers: headers, body: [], contentLength: body.count)
        } else if request.query("range") == "1", let range = request.head.headers.first(name: "Range"),
            let part = Self.byteRange(range, count: body.count)
        {
            headers.append(("Content-Range", "bytes \(part.lowerBound)-\(part.upperBound)/\(body.count)"))
            out.send(206, "Partial Content", headers: headers, body: Array(body[part]))
        } else if request.query("gzip") == "1" {
            headers.append(("Content-Encoding", "gzip"))
            out.send(200, headers: headers, body: Compression.compress(body, format: .gzip))
        } else if let delay = request.query("delayMs").flatMap(Int.init), delay > 0 {
            out.after(milliseconds: delay) { out.send(200, headers: headers, body: body) }
        } else {
            out.send(request.intQuery("status", default: 200), "Status", headers: headers, body: body)
        }
        return true
    }
}

extension TestServer {
    /// `bytes=a-b` or `bytes=a-`, clipped to `count`.
    static func byteRange(_ value: String, count: Int) -> ClosedRange<Int>? {
        guard value.hasPrefix("bytes=") else { return nil }
        let bounds = value.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), first < count else { return nil }
        let last = bounds[1].isEmpty ? count - 1 : min(Int(bounds[1]) ?? -1, count - 1)
        return last >= first ? first...last : nil
    }
}

func httpDate(_ date: Date) -> String { HTTPDate.format(date) }
func parseHTTPDate(_ text: String) -> Date? { HTTPDate.parse(text) }
