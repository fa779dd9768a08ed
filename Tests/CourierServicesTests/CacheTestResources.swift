import CourierServices
import Foundation

/// A resource over `/cache` whose value is the raw body, with every knob the RFC 9111 tests
/// turn: method, headers, accepted and cacheable statuses.
struct RawCachedResource: Resource {
    typealias Response = Data
    var baseURL: String
    var key: String
    var query: [String: String] = [:]
    var cachePolicy: CachePolicy = .http()
    var headers: HTTPFields = [:]
    var method: HTTPRequest.Method = .get
    var acceptableStatus: Range<Int> = 200..<300
    var cacheableStatus: CacheableStatus = .accepted
    var retryPolicy: RetryPolicy? = RetryPolicy.none
    var endpoint: Endpoint {
        Endpoint.cacheRoute(baseURL, key: key, query: query)
    }

    /// The same resource with `Cache-Control: value` on the request.
    func directive(_ value: String) -> RawCachedResource {
        var copy = self
        copy.headers[.cacheControl] = value
        return copy
    }
}

extension Endpoint {
    /// The test server's `/cache` route for `key`, with `query` (sorted, so URLs are stable).
    static func cacheRoute(_ baseURL: String, key: String, query: [String: String]) -> Endpoint {
        Endpoint(
            baseURL, path: "/cache",
            query: [URLQueryItem(name: "key", value: key)]
                + query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) })
    }
}
