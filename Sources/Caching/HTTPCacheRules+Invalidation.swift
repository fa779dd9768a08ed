package import HTTPTypes

extension HTTPCacheRules {
    /// Whether a response to `method` with `status` invalidates stored responses for its URL
    /// (section 4.4): an unsafe method that did not fail.
    package static func invalidates(method: HTTPRequest.Method, status: Int) -> Bool {
        let safe: [HTTPRequest.Method] = [.get, .head, .options, .trace]
        return !safe.contains(method) && (200..<400).contains(status)
    }

    /// The `GET` requests whose stored responses an unsafe `request` invalidates (section 4.4):
    /// its target, and the URIs of the response's `Location` and `Content-Location` when they
    /// have the target's origin (scheme and authority). The requests keep `request`'s fields,
    /// so their cache keys carry the same credentials.
    package static func invalidatedRequests(after request: HTTPRequest, response: HTTPResponse) -> [HTTPRequest] {
        var target = request
        target.method = .get
        var requests = [target]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name], let uri = resolve(value, against: request),
                uri.scheme == request.scheme?.lowercased(), uri.authority == request.authority?.lowercased()
            else { continue }
            var other = target
            other.path = uri.path
            if !requests.contains(where: { $0.path == other.path }) { requests.append(other) }
        }
        return requests
    }

    /// An absolute URI, an absolute path, a network path or a relative path, resolved against
    /// `base`'s URI (dot segments are not removed); fragments are dropped.
    static func resolve(_ reference: String, against base: HTTPRequest) -> (
        scheme: String, authority: String, path: String
    )? {
        var text = Substring(reference.trimmedSpaces)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard !text.isEmpty, let scheme = base.scheme?.lowercased(), let authority = base.authority?.lowercased()
        else { return nil }
        func split(_ rest: Substring) -> (String, String) {
            let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            let path = String(rest[end...])
            return (rest[..<end].lowercased(), path.hasPrefix("/") ? path : "/" + path)
        }
        if let colon = text.firstRange(of: "://") {
            let scheme = text[..<colon.lowerBound]
            if scheme.allSatisfy({ (c: Character) in c.isLetter || c == "+" || c == "-" || c == "." }) {
                let (host, path) = split(text[colon.upperBound...])
                return (scheme.lowercased(), host, path)
            }
        }
        if text.hasPrefix("//") {
            let (host, path) = split(text.dropFirst(2))
            return (scheme, host, path)
        }
        if text.hasPrefix("/") { return (scheme, authority, String(text)) }
        let basePath = base.path ?? "/"
        let directory = basePath[..<(basePath.firstIndex(of: "?") ?? basePath.endIndex)]
        if text.hasPrefix("?") { return (scheme, authority, String(directory) + String(text)) }
        let prefix = directory.lastIndex(of: "/").map { directory[...$0] } ?? "/"
        return (scheme, authority, String(prefix) + String(text))
    }
}
