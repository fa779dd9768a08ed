internal import CourierCaching
public import FoundationEssentials

extension CookieJar.Cookie {
    /// The largest `Set-Cookie` field value kept, in bytes (RFC 6265, section 6.1: name,
    /// value and attributes). Longer ones are ignored.
    package static let maximumSize = 4096
    /// The longest lifetime a cookie gets, whatever its `Max-Age` or `Expires` says: 400 days,
    /// as RFC 6265bis caps it (a year-9999 `Expires` is not a promise worth keeping).
    package static let maximumLifetime: TimeInterval = 400 * 86_400

    /// Parses one `Set-Cookie` field value that came from `host` (lower-case, no port) for a
    /// request to `path` (without query), over https when `isSecure`, received at `now`
    /// (RFC 6265, section 5.2 and the storage rules of 5.3).
    ///
    /// `nil` when the cookie must be ignored: no `name=`, an empty name, control characters,
    /// more than `maximumSize` bytes, a `Domain` the host does not domain-match (or a
    /// single-label or IP-address `Domain` other than the host itself: without the public
    /// suffix list, `Domain=com` is refused), `Secure` received over http, or a `__Secure-` /
    /// `__Host-` name whose rules it breaks. An invalid `Expires` or `Max-Age` attribute is
    /// ignored (the cookie lives on); `Max-Age` wins over `Expires`; `Max-Age=0` or a past
    /// `Expires` yield an expired cookie, which a jar takes as "delete". `SameSite` is ignored.
    public init?(
        setCookie field: String, host: String, path requestPath: String, isSecure secureChannel: Bool, now: Date
    ) {
        guard field.utf8.count <= Self.maximumSize,
            !field.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F })
        else { return nil }
        let parts = field.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = Self.trimmed(pair[..<equals])
        guard !name.isEmpty else { return nil }
        let value = Self.trimmed(pair[pair.index(after: equals)...])
        let host = host.lowercased()

        var expires: Date?
        var maxAge: Int?
        var domain: String?
        var path: String?
        var secure = false
        var httpOnly = false
        for attribute in parts.dropFirst() {
            let equals = attribute.firstIndex(of: "=")
            let key = Self.trimmed(attribute[..<(equals ?? attribute.endIndex)]).lowercased()
            let text = equals.map { Self.trimmed(attribute[attribute.index(after: $0)...]) } ?? ""
            switch key {
            case "expires": if let date = Self.parseDate(text) { expires = date }
            case "max-age": if let seconds = Self.parseMaxAge(text) { maxAge = seconds }
            case "domain":
                // An empty Domain is ignored (RFC 6265, section 5.2.3); a leading dot is dropped.
                if !text.isEmpty { domain = String(text.drop { $0 == "." }).lowercased() }
            case "path": path = text.hasPrefix("/") ? text : nil
            case "secure": secure = true
            case "httponly": httpOnly = true
            default: break  // SameSite, Priority, Partitioned, extensions: not for a non-browser client
            }
        }

        let latest = now.addingTimeInterval(Self.maximumLifetime)
        if let maxAge {
            expires =
                maxAge <= 0
                ? Date(timeIntervalSince1970: 0) : min(now.addingTimeInterval(TimeInterval(maxAge)), latest)
        } else if let date = expires {
            expires = min(date, latest)
        }

        var hostOnly = true
        var cookieDomain = host
        if let domain, domain != host {
            // Without the public suffix list: a single-label domain (`com`, `local`) or an IP
            // address is refused unless it is the host itself (then host-only, section 5.3 step 5).
            let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
            guard labels.count > 1, !labels.contains(where: \.isEmpty), !Self.isIPAddress(domain),
                Self.domainMatches(host, domain)
            else { return nil }
            hostOnly = false
            cookieDomain = domain
        } else if let domain, domain.contains("."), !Self.isIPAddress(domain) {
            hostOnly = false  // Domain=<the host>: also sent to its subdomains
        }

        if secure && !secureChannel { return nil }
        let lowered = name.lowercased()
        if lowered.hasPrefix("__secure-") && !secure { return nil }
        if lowered.hasPrefix("__host-") && (!secure || !hostOnly || path != "/") { return nil }

        self.init(
            name: name, value: value, domain: cookieDomain, isHostOnly: hostOnly,
            path: path ?? Self.defaultPath(of: requestPath), expires: expires, isSecure: secure,
            isHTTPOnly: httpOnly, created: now)
    }

    /// An HTTP date (``HTTPDate``), or the Netscape form with dashes that many servers still
    /// send in cookies (`Wed, 21-Oct-2015 07:28:00 GMT`); anything else is nil.
    static func parseDate(_ text: String) -> Date? {
        if let date = HTTPDate.parse(text) { return date }
        var bytes = Array(text.utf8)
        guard let comma = bytes.firstIndex(of: UInt8(ascii: ",")), bytes.count == comma + 26,
            bytes[comma + 4] == UInt8(ascii: "-"), bytes[comma + 8] == UInt8(ascii: "-")
        else { return nil }
        bytes[comma + 4] = UInt8(ascii: " ")
        bytes[comma + 8] = UInt8(ascii: " ")
        return HTTPDate.parse(String(decoding: bytes, as: UTF8.self))
    }

    /// `Max-Age`: an optional `-` and digits (RFC 6265, section 5.2.2); huge values saturate.
    static func parseMaxAge(_ text: String) -> Int? {
        let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard let magnitude = Int(digits) else { return text.hasPrefix("-") ? -1 : Int.max }
        return text.hasPrefix("-") ? -magnitude : magnitude
    }

    /// Without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = text.firstIndex(where: { !isBlank($0) }), let end = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(text[start...end])
    }
}
