internal import CourierCore
public import HTTPTypes

extension HTTPRequest {
    /// A request for an absolute `http` or `https` URL given as text, checked at once:
    ///
    /// ```swift
    /// let request = try HTTPRequest(method: .get, urlString: "https://api.example.com/v1/users?id=7")
    /// ```
    ///
    /// The scheme is case-insensitive; the path defaults to `/`; the query is kept as written
    /// and a fragment is dropped (it is never sent). Throws `invalidRequest` when the text has
    /// no scheme or another scheme, no host, credentials (`user@host`), a bad port, or a space,
    /// control or non-ASCII character anywhere (percent-encode those): never a trap.
    public init(method: Method, urlString: String, headerFields: HTTPFields = [:]) throws(ServiceError) {
        let parts = try Self.parse(urlString)
        self.init(
            method: method, scheme: parts.scheme, authority: parts.authority, path: parts.path,
            headerFields: headerFields)
        try RequestValidation.validate(self)
    }

    /// The scheme, authority and target (path and query) of `text`.
    static func parse(_ text: String) throws(ServiceError) -> (scheme: String, authority: String, path: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw ServiceError(.invalidRequest, "The URL is empty.") }
        if let bad = bytes.firstIndex(where: PercentEncoding.mustBeEncodedInTarget) {
            let what =
                switch bytes[bad] {
                case 0x20: "a space"
                case 0x0D, 0x0A: "a line break (CR or LF)"
                case 0x7F...: "a non-ASCII character"
                default: "a control character"
                }
            throw ServiceError(.invalidRequest, "The URL contains \(what) at byte \(bad): percent-encode it.")
        }
        // Only visible ASCII from here on, safe to show.
        let shown = text.utf8.count > 100 ? String(text.prefix(100)) + "…" : text
        guard let separator = bytes.firstRange(of: Array("://".utf8)),
            separator.lowerBound > 0, bytes[..<separator.lowerBound].allSatisfy(Self.isSchemeByte)
        else {
            throw ServiceError(.invalidRequest, "The URL '\(shown)' has no scheme: write it as https://host/path.")
        }
        let scheme = String(decoding: bytes[..<separator.lowerBound].map { $0 | 0x20 }, as: UTF8.self)
        guard scheme == "http" || scheme == "https" else {
            throw ServiceError(.invalidRequest, "The URL '\(shown)' is not http or https (its scheme is '\(scheme)').")
        }
        let rest = bytes[separator.upperBound...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        let authority = String(decoding: rest[..<authorityEnd], as: UTF8.self)
        try checkAuthority(authority, shown: shown)
        var target = rest[authorityEnd...]
        if let fragment = target.firstIndex(of: UInt8(ascii: "#")) { target = target[..<fragment] }
        var path = String(decoding: target, as: UTF8.self)
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        return (scheme, authority, path)
    }

    /// A host (a name, an IPv4 address or a bracketed IPv6 address) and an optional port.
    private static func checkAuthority(_ authority: String, shown: String) throws(ServiceError) {
        if authority.utf8.contains(UInt8(ascii: "@")) {
            throw ServiceError(
                .invalidRequest, "The URL '\(shown)' has credentials before its host: send them in a header instead.")
        }
        var host = Substring(authority)
        var port: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                throw ServiceError(.invalidRequest, "The URL '\(shown)' has an unclosed IPv6 address.")
            }
            let after = host[host.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw ServiceError(.invalidRequest, "The URL '\(shown)' has text after its IPv6 address.")
                }
                port = after.dropFirst()
            }
            host = host[...close]
        } else if let colon = host.lastIndex(of: ":") {
            port = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty, host != "[]" else {
            throw ServiceError(.invalidRequest, "The URL '\(shown)' has no host.")
        }
        if let port {
            guard !port.isEmpty, port.count <= 5, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int(port), number <= 65_535
            else {
                throw ServiceError(.invalidRequest, "The URL '\(shown)' has an invalid port '\(port.prefix(20))'.")
            }
        }
    }

    /// Letters, digits, `+`, `-` and `.` (RFC 3986, section 3.1).
    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
