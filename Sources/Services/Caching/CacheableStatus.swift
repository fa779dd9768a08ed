/// Which responses a load may store although its resource does not accept their status:
/// ``Resource/acceptableStatus`` decides what fails, this decides what the cache keeps.
///
/// A stored response with a rejected status answers later loads as HTTP allows (fresh, or
/// after a 304) and fails them with `unacceptableStatus` again, without a request: a missing
/// resource's 404 is asked once per freshness lifetime, not once per load. A server error
/// (5xx) is stored only by ``http``, under `CachePolicy.http`, when it is fresh as it arrives
/// (a positive `max-age`, an `Expires` ahead; a 501 also by heuristic freshness, from its
/// `Last-Modified`), and never when a stored response may answer in its place
/// (`stale-if-error`): storing it would replace the response that fallback serves.
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
    /// freshness or a validator, or a heuristically cacheable status (404, 405, 410, 414, …);
    /// a server error (5xx) only when fresh as it arrives, under `CachePolicy.http`, and unless
    /// `stale-if-error` may serve a stored response in its place.
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

    /// Whether a response the resource rejected with `status` may be stored (a 5xx under the
    /// further conditions of ``http``, which the coordinator checks).
    func storesRejected(_ status: HTTPResponse.Status) -> Bool {
        switch rule {
        case .accepted: return false
        case .http: return true
        case .including(let statuses): return status.code < 500 && statuses.contains(status)
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
