/// Which responses a load may store although its resource does not accept their status:
/// ``Resource/acceptableStatus`` decides what fails, this decides what the cache keeps.
///
/// A stored response with a rejected status answers later loads as HTTP allows (fresh, or
/// after a 304) and fails them with `unacceptableStatus` again, without a request: a missing
/// resource's 404 is asked once per freshness lifetime, not once per load. Server errors
/// (5xx) are never stored this way: they are the failures `stale-if-error` and
/// `CachePolicy.networkElseCache(tiers:)` stand in for, and storing one would replace the
/// response that fallback serves.
///
/// ```swift
/// struct Avatar: Resource {
///     typealias Response = Data
///     var endpoint: Endpoint { Endpoint("https://cdn.example.com", path: "/avatars/7") }
///     var cachePolicy: CachePolicy { .http() }
///     var cacheableStatus: CacheableStatus { .http }   // keep the 404 of a user without one
/// }
/// ```
public struct CacheableStatus: Sendable, Hashable, CustomStringConvertible {
    private enum Rule: Sendable, Hashable {
        case accepted
        case http
        case including(Set<HTTPResponse.Status>)
    }

    private let rule: Rule

    /// Only responses the resource accepts (the default, and the behaviour before this option).
    public static let accepted = CacheableStatus(rule: .accepted)

    /// Also rejected responses HTTP lets a cache store (RFC 9111, section 3): those with explicit
    /// freshness or a validator, or a heuristically cacheable status (404, 405, 410, 414, …),
    /// below 500.
    public static let http = CacheableStatus(rule: .http)

    /// Also rejected responses with one of `statuses`, when HTTP lets a cache store them
    /// (statuses of 500 and above are ignored).
    public static func including(_ statuses: Set<HTTPResponse.Status>) -> CacheableStatus {
        CacheableStatus(rule: .including(statuses))
    }

    /// Also rejected responses with one of the status codes `statuses`.
    @available(*, deprecated, message: "Pass the statuses as HTTPResponse.Status (integer literals still work).")
    @_disfavoredOverload
    public static func including(_ statuses: Set<Int>) -> CacheableStatus {
        including(Set(statuses.map { HTTPResponse.Status(code: $0) }))
    }

    /// Whether a response the resource rejected with `status` may be stored.
    func storesRejected(_ status: HTTPResponse.Status) -> Bool {
        guard status.code < 500 else { return false }
        switch rule {
        case .accepted: return false
        case .http: return true
        case .including(let statuses): return statuses.contains(status)
        }
    }

    public var description: String {
        switch rule {
        case .accepted: "accepted"
        case .http: "http"
        case .including(let statuses): "including(\(statuses.map(\.code).sorted()))"
        }
    }
}
