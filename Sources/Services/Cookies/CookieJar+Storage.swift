internal import FoundationEssentials
internal import HTTPTypes

extension CookieJar {
    /// Where a request goes, as cookies see it: host (lower-case, no port, IPv6 without
    /// brackets), path without query, and whether the channel is https.
    struct Origin {
        var host: String
        var path: String
        var isSecure: Bool

        init(_ request: HTTPRequest) {
            isSecure = request.scheme?.lowercased() == "https"
            var authority = (request.authority ?? "")[...]
            if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                host = String(authority[authority.index(after: authority.startIndex)..<close]).lowercased()
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon]).lowercased()
            } else {
                host = authority.lowercased()
            }
            let full = request.path ?? "/"
            let path = full.firstIndex(of: "?").map { String(full[..<$0]) } ?? full
            self.path = path.hasPrefix("/") ? path : "/"
        }
    }

    /// Stores `cookie` (RFC 6265, section 5.3 steps 11 and 12, with RFC 6265bis's rule that an
    /// http response never replaces a `Secure` cookie), then evicts down to `limits`.
    static func store(
        _ cookie: Cookie, fromSecure secureChannel: Bool, now: Date, limits: Limits,
        in state: inout (domains: [String: [Cookie]], count: Int)
    ) {
        var cookie = cookie
        var bucket = state.domains[cookie.domain] ?? []
        if !secureChannel,
            bucket.contains(where: {
                $0.isSecure && $0.name == cookie.name
                    && (Cookie.pathMatches(cookie.path, $0.path) || Cookie.pathMatches($0.path, cookie.path))
            })
        {
            return
        }
        if let index = bucket.firstIndex(where: { $0.name == cookie.name && $0.path == cookie.path }) {
            cookie.created = bucket[index].created
            bucket.remove(at: index)
            state.count -= 1
        }
        if cookie.isExpired(at: now) {
            state.domains[cookie.domain] = bucket.isEmpty ? nil : bucket
            return
        }
        cookie.lastAccessed = now
        bucket.append(cookie)
        state.count += 1
        if bucket.count > limits.perDomain {
            let before = bucket.count
            bucket.removeAll { $0.isExpired(at: now) }
            while bucket.count > limits.perDomain, let oldest = leastRecentlyUsed(in: bucket) {
                bucket.remove(at: oldest)
            }
            state.count -= before - bucket.count
        }
        state.domains[cookie.domain] = bucket
        if state.count > limits.total { evict(now: now, limit: limits.total, in: &state) }
    }

    /// Removes expired cookies, then the least recently used, until at most `limit` remain:
    /// one scan per cookie removed, without copying a bucket.
    private static func evict(now: Date, limit: Int, in state: inout (domains: [String: [Cookie]], count: Int)) {
        while state.count > limit {
            var victim: (domain: String, index: Int, used: Date)?
            scan: for (domain, bucket) in state.domains {
                for index in bucket.indices {
                    let cookie = bucket[index]
                    if cookie.isExpired(at: now) {
                        victim = (domain, index, .distantPast)
                        break scan
                    }
                    if victim.map({ cookie.lastAccessed < $0.used }) ?? true {
                        victim = (domain, index, cookie.lastAccessed)
                    }
                }
            }
            guard let victim else { return }
            state.domains[victim.domain]!.remove(at: victim.index)
            if state.domains[victim.domain]!.isEmpty { state.domains[victim.domain] = nil }
            state.count -= 1
        }
    }

    /// The index of the least recently used cookie (the earliest stored among equals).
    private static func leastRecentlyUsed(in bucket: [Cookie]) -> Int? {
        bucket.indices.min { bucket[$0].lastAccessed < bucket[$1].lastAccessed }
    }
}
