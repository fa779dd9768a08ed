public import FoundationEssentials

extension CookieJar {
    /// One cookie a server set (RFC 6265, section 5.3), as a ``CookieJar`` keeps it.
    ///
    /// Its ``description`` and its mirror (`dump`, `print`, string interpolation) show the name,
    /// domain and path but never the value: a cookie is usually a session credential. (Nested in
    /// ``CookieJar`` because server frameworks and Foundation already own the name `Cookie` or
    /// `HTTPCookie`.)
    public struct Cookie: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The cookie's name (case-sensitive).
        public var name: String
        /// The cookie's value, sent back as is.
        public var value: String
        /// The host (host-only cookies) or the domain (from a `Domain` attribute) it is sent to,
        /// lower-case, without a leading dot.
        public var domain: String
        /// Whether it is sent to ``domain`` only (no `Domain` attribute), not to its subdomains.
        public var isHostOnly: Bool
        /// The path it is sent under (its `Path` attribute, else the default path of the URL that
        /// set it, RFC 6265 section 5.1.4).
        public var path: String
        /// When it expires; `nil` for a session cookie, kept until its jar is emptied.
        public var expires: Date?
        /// Whether it is sent over https only (`Secure`).
        public var isSecure: Bool
        /// Whether the server marked it `HttpOnly`. Courier is not a browser and has no scripts to
        /// hide it from, so it is kept and sent like any other.
        public var isHTTPOnly: Bool
        /// When it was first stored (replacing a cookie keeps the first creation time).
        public var created: Date
        /// When it was last stored or sent: the least recently used cookies are evicted first.
        package var lastAccessed: Date

        /// Creates a cookie (for tests and for seeding a jar with ``CookieJar/insert(_:)``).
        public init(
            name: String, value: String, domain: String, isHostOnly: Bool = true, path: String = "/",
            expires: Date? = nil, isSecure: Bool = false, isHTTPOnly: Bool = false, created: Date = Date()
        ) {
            self.name = name
            self.value = value
            self.domain = domain.lowercased()
            self.isHostOnly = isHostOnly
            self.path = path
            self.expires = expires
            self.isSecure = isSecure
            self.isHTTPOnly = isHTTPOnly
            self.created = created
            self.lastAccessed = created
        }

        /// Whether it has expired at `now`.
        package func isExpired(at now: Date) -> Bool { expires.map { $0 <= now } ?? false }

        /// Whether it is sent with a request to `host` (lower-case, without port), `path` (without
        /// query) over https (`isSecure`), at `now`: domain-match, path-match, `Secure`, expiry
        /// (RFC 6265, section 5.4).
        package func matches(
            host: String, path requestPath: String, isSecure secureChannel: Bool, at now: Date
        ) -> Bool {
            if isSecure && !secureChannel { return false }
            if isExpired(at: now) { return false }
            if isHostOnly ? host != domain : !Self.domainMatches(host, domain) { return false }
            return Cookie.pathMatches(requestPath, path)
        }

        /// Stored size as RFC 6265, section 6.1 measures it (name and value, in bytes).
        var size: Int { name.utf8.count + value.utf8.count }

        /// `name=value`, as a `Cookie` header carries it.
        var pair: String { "\(name)=\(value)" }

        public var description: String {
            var text = "Cookie(\(name), domain: \(isHostOnly ? "" : ".")\(domain), path: \(path)"
            if isSecure { text += ", secure" }
            if isHTTPOnly { text += ", httpOnly" }
            return text + ", value: <redacted>)"
        }

        public var debugDescription: String { description }

        public var customMirror: Mirror {
            Mirror(self, children: ["name": name, "domain": domain, "path": path, "value": "<redacted>"])
        }

        /// RFC 6265, section 5.1.3: `host` is `domain`, or ends with `.domain` and is not an IP address.
        static func domainMatches(_ host: String, _ domain: String) -> Bool {
            if host == domain { return true }
            guard host.hasSuffix(domain), host.utf8.count > domain.utf8.count, !isIPAddress(host) else { return false }
            return host.utf8.dropLast(domain.utf8.count).last == UInt8(ascii: ".")
        }

        /// RFC 6265, section 5.1.4: the cookie path is the request path, or a prefix of it that
        /// ends with `/` or is followed by `/`.
        static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
            if requestPath == cookiePath { return true }
            guard requestPath.hasPrefix(cookiePath) else { return false }
            if cookiePath.hasSuffix("/") { return true }
            return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
        }

        /// RFC 6265, section 5.1.4: the directory of the request path (`/a/b` -> `/a`), or `/`.
        static func defaultPath(of requestPath: String) -> String {
            guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"),
                slash != requestPath.startIndex
            else { return "/" }
            return String(requestPath[..<slash])
        }

        /// Whether `host` is an IPv4 address (dotted decimal) or an IPv6 literal.
        static func isIPAddress(_ host: String) -> Bool {
            if host.contains(":") { return true }  // IPv6, bracketed or not
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4
                && parts.allSatisfy { part in
                    !part.isEmpty && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && UInt8(part) != nil
                }
        }
    }
}
