internal import HTTPTypes

/// The request of one hop, and how the next hop follows a redirect (see ``RedirectPolicy``).
struct RedirectHop {
    var request: HTTPRequest
    var body: RequestBody?

    func following(
        status: Int, to target: String, policy: RedirectPolicy, response: HTTPResponse
    ) throws(ServiceError) -> RedirectHop {
        guard let url = AbsoluteURL(target), url.scheme == "http" || url.scheme == "https" else {
            throw Self.unfollowable(location: target, response: response)
        }
        if request.scheme == "https" && url.scheme == "http" {
            throw ServiceError(.redirectRefused, "Refused a redirect from https to http.", response: response)
        }
        var next = request
        let sameOrigin =
            url.scheme == request.scheme
            && AbsoluteURL.origin(url.scheme, url.authority) == AbsoluteURL.origin(url.scheme, request.authority ?? "")
        next.scheme = url.scheme
        next.authority = url.authority
        next.path = url.path
        if !sameOrigin {
            for name in policy.sensitiveHeaders { next.headerFields[name] = nil }
        }
        var nextBody = body
        let becomesGet =
            (status == 303 && request.method != .head) || ((status == 301 || status == 302) && request.method == .post)
        if becomesGet {
            next.method = .get
            nextBody = nil
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
        }
        return RedirectHop(request: next, body: nextBody)
    }

    /// The error for a redirect that cannot be followed: `redirectRefused` when the target
    /// names another scheme (`file:`, `ftp:`, `javascript:` ...), `malformedResponse` when it
    /// is not a URL at all.
    static func unfollowable(location: String?, response: HTTPResponse?) -> ServiceError {
        if let location, let colon = location.firstIndex(of: ":") {
            let scheme = location[..<colon]
            if let first = scheme.first, first.isASCII, first.isLetter,
                scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
                scheme.lowercased() != "http", scheme.lowercased() != "https"
            {
                return ServiceError(
                    .redirectRefused, "Refused a redirect to a \(scheme.prefix(16).lowercased()) URL.",
                    response: response)
            }
        }
        return ServiceError(.malformedResponse, "The redirect target is not a valid URL.", response: response)
    }
}

/// The parts of an absolute URL that an `HTTPRequest` holds.
struct AbsoluteURL: Equatable {
    var scheme: String
    var authority: String
    var path: String

    init?(_ text: String) {
        guard let separator = text.firstRange(of: "://") else { return nil }
        scheme = text[..<separator.lowerBound].lowercased()
        let rest = text[separator.upperBound...]
        let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<pathStart]
        // Drop any user information: credentials never travel in a redirect.
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.isEmpty else { return nil }
        self.authority = String(authority)
        var path = String(rest[pathStart...])
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if path.isEmpty || path.first == "?" { path = "/" + path }
        self.path = path
    }

    /// host[:port] lowercased, with the scheme's default port made explicit.
    static func origin(_ scheme: String, _ authority: String) -> String {
        let lowered = authority.lowercased()
        let hasPort: Bool
        if let closing = lowered.lastIndex(of: "]") {
            hasPort = lowered[closing...].contains(":")
        } else {
            hasPort = lowered.contains(":")
        }
        if hasPort { return lowered }
        return lowered + (scheme == "https" ? ":443" : ":80")
    }
}
