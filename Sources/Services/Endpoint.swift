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
    public var backend: (any Backend)?
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
    public func resolved(in environment: BackendEnvironment) throws(ServiceError) -> Endpoint {
        guard let backend, baseURL.isEmpty else { return self }
        guard let base = backend.baseURL(in: environment) else {
            throw ServiceError(.invalidRequest, "The backend '\(backend.id)' has no base URL for the \(environment) environment.")
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
        guard let schemeEnd = Self.schemeSeparator(in: baseURL) else {
            throw ServiceError(.invalidRequest, "The base URL '\(baseURL.prefix(100))' has no scheme.")
        }
        // Scanned as UTF-8 bytes: walking characters costs more than the rest of the request.
        let scheme: String
        let schemeBytes = baseURL.utf8[..<schemeEnd.lowerBound]
        if Self.equalsIgnoringASCIICase(schemeBytes, "http") {
            scheme = "http"
        } else if Self.equalsIgnoringASCIICase(schemeBytes, "https") {
            scheme = "https"
        } else {
            throw ServiceError(.invalidRequest, "Only http and https base URLs are supported.")
        }
        let rest = baseURL.utf8[schemeEnd.upperBound...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        let authority = String(baseURL[schemeEnd.upperBound..<authorityEnd])
        guard !authority.isEmpty else { throw ServiceError(.invalidRequest, "The base URL has no host.") }
        var basePath = baseURL[authorityEnd...]
        if basePath.utf8.contains(UInt8(ascii: "?")) || basePath.utf8.contains(UInt8(ascii: "#")) {
            throw ServiceError(.invalidRequest, "Put query items in `query`, not in the base URL.")
        }
        while basePath.utf8.last == UInt8(ascii: "/") { basePath.removeLast() }
        // The target is written once, into one buffer: the base path and the path encoded as a
        // path, then the query items (each piece its own string cost more than the transfer's
        // bookkeeping).
        var target: [UInt8] = []
        target.reserveCapacity(basePath.utf8.count + path.utf8.count + 1 + queryItems.count * 24)
        basePath.withUTF8 { PercentEncoding.append($0, to: &target, keeping: .path) }
        if !path.isEmpty {
            if path.utf8.first != UInt8(ascii: "/") { target.append(UInt8(ascii: "/")) }
            var path = path
            path.withUTF8 { PercentEncoding.append($0, to: &target, keeping: .path) }
        }
        if target.isEmpty { target.append(UInt8(ascii: "/")) }
        if !queryItems.isEmpty {
            target.append(UInt8(ascii: "?"))
            Self.appendQuery(queryItems, to: &target)
        }
        return (scheme, authority, String(decoding: target, as: UTF8.self))
    }

    /// Whether `bytes` spell `lowercase` in any case (ASCII).
    private static func equalsIgnoringASCIICase(_ bytes: Substring.UTF8View, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        var offset = 0
        for byte in bytes {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard folded == expected[offset] else { return false }
            offset += 1
        }
        return true
    }

    /// The range of the first "://" (found on the UTF-8 view: a generic substring search costs
    /// more than building the rest of the request).
    static func schemeSeparator(in url: String) -> Range<String.Index>? {
        let utf8 = url.utf8
        var index = utf8.startIndex
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: ":") {
                let slash = utf8.index(after: index)
                if slash != utf8.endIndex, utf8[slash] == UInt8(ascii: "/") {
                    let second = utf8.index(after: slash)
                    if second != utf8.endIndex, utf8[second] == UInt8(ascii: "/") {
                        return index..<utf8.index(after: second)
                    }
                }
            }
            index = utf8.index(after: index)
        }
        return nil
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
