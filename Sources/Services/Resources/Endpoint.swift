internal import CourierCore
public import FoundationEssentials

/// Where a resource lives: a base URL, a path appended to it, and query items.
///
/// Query names and values are percent-encoded here (everything outside RFC 3986's
/// unreserved set, so a space is `%20`, `+` is `%2B`, `&` is `%26`, and non-ASCII text is
/// encoded as UTF-8). Path text is taken as given, except that characters which cannot
/// appear in a path (spaces, non-ASCII) are encoded.
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    /// The scheme, host, port and optional leading path, e.g. `https://api.example.com/v2`.
    /// Empty for an endpoint of a ``Backend`` until a coordinator picks the environment.
    public var baseURL: String
    /// The backend whose base URL (per environment), headers, decorators and rules apply.
    package var backend: (any Backend)?
    /// The path below the base URL, e.g. `/users/7`.
    public var path: String
    /// The query items, in order. A `nil` value sends the name alone (`?flag`).
    public var queryItems: [URLQueryItem]

    /// Creates an endpoint.
    public init(_ baseURL: String, path: String = "", query: [URLQueryItem] = []) {
        self.baseURL = baseURL
        self.path = path
        self.queryItems = query
    }

    /// Creates an endpoint with query items from pairs.
    public init(_ baseURL: String, path: String = "", query: KeyValuePairs<String, String>) {
        self.init(baseURL, path: path, query: query.map { URLQueryItem(name: $0.key, value: $0.value) })
    }

    /// An endpoint of `backend`: the coordinator resolves the base URL for its environment.
    public init(_ backend: some Backend, path: String = "", query: [URLQueryItem] = []) {
        self.init("", path: path, query: query)
        self.backend = backend
    }

    /// An endpoint of `backend` with query items from pairs.
    public init(_ backend: some Backend, path: String = "", query: KeyValuePairs<String, String>) {
        self.init(backend, path: path, query: query.map { URLQueryItem(name: $0.key, value: $0.value) })
    }

    /// This endpoint with the backend's base URL for `environment` filled in.
    package func resolved(in environment: BackendEnvironment) throws(ServiceError) -> Endpoint {
        guard let backend, baseURL.isEmpty else { return self }
        guard let base = backend.baseURL(in: environment) else {
            throw ServiceError(
                .invalidRequest, "The backend '\(backend.id)' has no base URL for the \(environment) environment.")
        }
        var resolved = self
        resolved.baseURL = base
        return resolved
    }

    public static func == (lhs: Endpoint, rhs: Endpoint) -> Bool {
        lhs.baseURL == rhs.baseURL && lhs.path == rhs.path && lhs.queryItems == rhs.queryItems
            && lhs.backend?.id == rhs.backend?.id
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(baseURL)
        hasher.combine(path)
        hasher.combine(queryItems)
        hasher.combine(backend?.id)
    }

    /// The full URL text.
    public var description: String {
        if baseURL.isEmpty, let backend { return "<\(backend.id)>" + path }
        guard let parts = try? components() else { return baseURL + path }
        return "\(parts.scheme)://\(parts.authority)\(parts.path)"
    }

    /// Splits the endpoint into the pieces of an `HTTPRequest`.
    func components() throws(ServiceError) -> (scheme: String, authority: String, path: String) {
        var base = baseURL
        // One pass over the base URL's bytes: walking its characters, or even its UTF-8 view by
        // index, cost more than the rest of the request.
        let split = base.withUTF8 { Self.split($0) }
        let parts: BaseParts
        switch split {
        case .success(let found): parts = found
        case .failure(.noScheme):
            throw ServiceError(.invalidRequest, "The base URL '\(baseURL.prefix(100))' has no scheme.")
        case .failure(.unsupportedScheme):
            throw ServiceError(.invalidRequest, "Only http and https base URLs are supported.")
        case .failure(.noHost): throw ServiceError(.invalidRequest, "The base URL has no host.")
        case .failure(.queryInBase):
            throw ServiceError(.invalidRequest, "Put query items in `query`, not in the base URL.")
        }
        // The target is written once, into one buffer: the base path and the path encoded as a
        // path, then the query items (each piece its own string cost more than the transfer's
        // bookkeeping).
        var target: [UInt8] = []
        target.reserveCapacity(parts.path.count + path.utf8.count + 1 + queryItems.count * 24)
        let authority = base.withUTF8 { url in
            PercentEncoding.append(UnsafeBufferPointer(rebasing: url[parts.path]), to: &target, keeping: .path)
            return String(decoding: UnsafeBufferPointer(rebasing: url[parts.authority]), as: UTF8.self)
        }
        if !path.isEmpty {
            var path = path
            path.withUTF8 { path in
                if path.first != UInt8(ascii: "/") { target.append(UInt8(ascii: "/")) }
                PercentEncoding.append(path, to: &target, keeping: .path)
            }
        }
        if target.isEmpty { target.append(UInt8(ascii: "/")) }
        if !queryItems.isEmpty {
            target.append(UInt8(ascii: "?"))
            Self.appendQuery(queryItems, to: &target)
        }
        return (parts.isSecure ? "https" : "http", authority, String(decoding: target, as: UTF8.self))
    }

    /// Where a base URL's authority and path are, by byte offset.
    private struct BaseParts {
        var isSecure: Bool
        var authority: Range<Int>
        /// Without its trailing slashes.
        var path: Range<Int>
    }

    private enum SplitFailure: Error {
        case noScheme, unsupportedScheme, noHost, queryInBase
    }

    /// Finds the scheme (http or https, in any case), the authority and the path of `url`.
    private static func split(_ url: UnsafeBufferPointer<UInt8>) -> Result<BaseParts, SplitFailure> {
        let count = url.count
        var colon = 0
        while colon < count,
            url[colon] != UInt8(ascii: ":") || colon + 2 >= count
                || url[colon + 1] != UInt8(ascii: "/") || url[colon + 2] != UInt8(ascii: "/")
        {
            colon += 1
        }
        guard colon < count else { return .failure(.noScheme) }
        let isSecure: Bool
        switch colon {
        case 4 where isASCIIPrefix(url, lowercased: "http"): isSecure = false
        case 5 where isASCIIPrefix(url, lowercased: "https"): isSecure = true
        default: return .failure(.unsupportedScheme)
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < count, url[authorityEnd] != UInt8(ascii: "/"), url[authorityEnd] != UInt8(ascii: "?"),
            url[authorityEnd] != UInt8(ascii: "#")
        {
            authorityEnd += 1
        }
        guard authorityEnd > authorityStart else { return .failure(.noHost) }
        for index in authorityEnd..<count where url[index] == UInt8(ascii: "?") || url[index] == UInt8(ascii: "#") {
            return .failure(.queryInBase)
        }
        var pathEnd = count
        while pathEnd > authorityEnd, url[pathEnd - 1] == UInt8(ascii: "/") { pathEnd -= 1 }
        return .success(
            BaseParts(isSecure: isSecure, authority: authorityStart..<authorityEnd, path: authorityEnd..<pathEnd))
    }

    /// Whether `url` begins with `lowercase` in any case (ASCII).
    private static func isASCIIPrefix(_ url: UnsafeBufferPointer<UInt8>, lowercased lowercase: StaticString) -> Bool {
        let expected = lowercase.utf8Start
        for offset in 0..<lowercase.utf8CodeUnitCount {
            let byte = url[offset]
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard folded == expected[offset] else { return false }
        }
        return true
    }

    /// Appends `name=value&...`, names and values percent-encoded, to `out`.
    private static func appendQuery(_ items: [URLQueryItem], to out: inout [UInt8]) {
        for index in items.indices {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            var name = items[index].name
            name.withUTF8 { PercentEncoding.append($0, to: &out, keeping: .unreserved) }
            if var value = items[index].value {
                out.append(UInt8(ascii: "="))
                value.withUTF8 { PercentEncoding.append($0, to: &out, keeping: .unreserved) }
            }
        }
    }
}
