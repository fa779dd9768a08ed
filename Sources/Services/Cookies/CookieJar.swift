internal import CourierCore
public import FoundationEssentials
public import HTTPTypes

/// Cookies a server set, kept in memory and sent back on later requests (RFC 6265).
///
/// A coordinator has no cookie jar unless you give it one, through a ``CookieDecorator``.
/// That is on purpose: a server holds one coordinator for many users, and one shared jar
/// would send one user's session cookie with another user's requests. Give each user their
/// own jar (``CookieJar/Partitioned``), or use one jar only where one user owns the coordinator
/// (a command-line tool, an app).
///
/// Limits (RFC 6265, section 6.1, as caps): `maximumSize` bytes per `Set-Cookie`,
/// ``Limits/perDomain`` cookies per domain and ``Limits/total`` in all; past them, expired
/// cookies go first, then the least recently used. Bad input is ignored, never an error.
/// Session cookies (no `Max-Age` or `Expires`) live until ``removeAll()`` or the jar's end.
///
/// The jar is thread-safe. Its ``description`` counts cookies and never shows a value.
public final class CookieJar: Sendable, CustomStringConvertible {
    /// How many cookies a jar keeps.
    public struct Limits: Sendable, Hashable {
        /// Cookies per domain (host or `Domain` attribute). 50 by default.
        public var perDomain: Int
        /// Cookies in the whole jar. 3000 by default.
        public var total: Int

        /// Creates limits (each at least 1).
        public init(perDomain: Int = 50, total: Int = 3000) {
            self.perDomain = max(1, perDomain)
            self.total = max(1, total)
        }
    }

    /// The jar's limits.
    public let limits: Limits
    private let now: @Sendable () -> Date
    /// Cookies by ``Cookie/domain``, and how many there are in all.
    private let state = LockedValue<(domains: [String: [Cookie]], count: Int)>(([:], 0))

    /// Creates an empty jar. `now` is the wall clock expiry is measured on (tests inject one).
    public init(limits: Limits = Limits(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.limits = limits
        self.now = now
    }

    /// Stores the `Set-Cookie` fields of `response`, which answered `request`.
    package func store(from response: HTTPResponse, for request: HTTPRequest) {
        store(setCookie: response.headerFields[values: .setCookie], for: request)
    }

    /// Stores `Set-Cookie` field values received for `request`; invalid ones are ignored.
    package func store(setCookie fields: [String], for request: HTTPRequest) {
        guard !fields.isEmpty else { return }
        let origin = Origin(request)
        let time = now()
        let cookies = fields.compactMap {
            Cookie(setCookie: $0, host: origin.host, path: origin.path, isSecure: origin.isSecure, now: time)
        }
        state.withLock { state in
            for cookie in cookies {
                Self.store(cookie, fromSecure: origin.isSecure, now: time, limits: limits, in: &state)
            }
        }
    }

    /// Adds `cookie` as if a server had set it over https (replacing one with its name, domain
    /// and path); an expired cookie removes that one instead.
    public func insert(_ cookie: Cookie) {
        let time = now()
        state.withLock { Self.store(cookie, fromSecure: true, now: time, limits: limits, in: &$0) }
    }

    /// The cookies to send with `request`: longer paths first, then older ones (RFC 6265,
    /// section 5.4). Sending counts as a use for the least-recently-used eviction.
    public func cookies(for request: HTTPRequest) -> [Cookie] {
        let origin = Origin(request)
        let time = now()
        var candidates = [origin.host]
        if !Cookie.isIPAddress(origin.host) {
            var rest = origin.host[...]
            while let dot = rest.firstIndex(of: ".") {
                rest = rest[rest.index(after: dot)...]
                if !rest.isEmpty { candidates.append(String(rest)) }
            }
        }
        var found: [Cookie] = []
        state.withLock { state in
            for domain in candidates {
                guard var bucket = state.domains[domain] else { continue }
                let before = bucket.count
                bucket.removeAll { $0.isExpired(at: time) }
                for index in bucket.indices
                where bucket[index].matches(host: origin.host, path: origin.path, isSecure: origin.isSecure, at: time) {
                    bucket[index].lastAccessed = time
                    found.append(bucket[index])
                }
                state.count -= before - bucket.count
                state.domains[domain] = bucket.isEmpty ? nil : bucket
            }
        }
        return found.sorted {
            let (left, right) = ($0.path.utf8.count, $1.path.utf8.count)
            return left != right ? left > right : $0.created < $1.created
        }
    }

    /// The `Cookie` field value for `request` (`a=1; b=2`), or nil when no cookie matches.
    package func cookieHeader(for request: HTTPRequest) -> String? {
        let cookies = cookies(for: request)
        return cookies.isEmpty ? nil : cookies.map(\.pair).joined(separator: "; ")
    }

    /// Every cookie, expired ones included until the next store or lookup removes them.
    public var allCookies: [Cookie] { state.withLock { $0.domains.values.flatMap { $0 } } }

    /// How many cookies the jar holds.
    public var count: Int { state.withLock { $0.count } }

    /// Removes every cookie (a user logged out).
    public func removeAll() { state.withLock { $0 = ([:], 0) } }

    /// Removes the expired cookies.
    package func removeExpired() {
        let time = now()
        state.withLock { state in
            for (domain, bucket) in state.domains {
                let kept = bucket.filter { !$0.isExpired(at: time) }
                state.count -= bucket.count - kept.count
                state.domains[domain] = kept.isEmpty ? nil : kept
            }
        }
    }

    public var description: String { "CookieJar(\(count) cookies)" }
}
