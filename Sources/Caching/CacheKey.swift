public import HTTPTypes

/// Identifies a stored response: the method and URL, and a SHA-256 digest of the request's
/// credentials, so that one coordinator serving many users never hands one user's response
/// to another. Credentials themselves are never part of a key.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The full key text, kept in each disk entry's header so a file-name collision is harmless.
    public let rawValue: String
    /// Lower-case hex SHA-256 of `rawValue`: the entry's file name on disk.
    public let digest: String
    /// The digest's first 8 bytes: hashing a key costs one word, not two strings.
    private let prefix: UInt64

    /// A key from its text (for stores and tests; loads build keys with ``init(request:credentialHeaders:)``).
    public init(_ rawValue: String) {
        self.rawValue = rawValue
        let bytes = SHA256.hash(rawValue.utf8)
        digest = SHA256.hex(bytes)
        prefix = bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.prefix == rhs.prefix && lhs.rawValue == rhs.rawValue
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(prefix) }

    /// The key of `request`: method, scheme, authority and path (with its query), plus the
    /// digest of the values of `credentialHeaders` when the request carries any of them.
    public init(request: HTTPRequest, credentialHeaders: [HTTPField.Name]) {
        var text =
            "\(request.method.rawValue) \(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "/")"
        if let credentials = CacheKey.credentialDigest(of: request, names: credentialHeaders) {
            text += " credentials=" + credentials
        }
        self.init(text)
    }

    /// Hex SHA-256 of the credential fields `request` carries, or nil when it carries none.
    /// The coalescing key of the services layer includes the same fields.
    package static func credentialDigest(of request: HTTPRequest, names: [HTTPField.Name]) -> String? {
        var hash = SHA256()
        var found = false
        for field in request.headerFields where names.contains(field.name) {
            hash.update(field: field.name.canonicalName)
            hash.update(field: field.value)
            found = true
        }
        return found ? SHA256.hex(hash.finalize()) : nil
    }

    /// The same key for another method (unsafe methods invalidate the `GET` entry of their URL).
    package func replacingMethod(with method: HTTPRequest.Method) -> CacheKey {
        guard let space = rawValue.firstIndex(of: " ") else { return self }
        return CacheKey(method.rawValue + rawValue[space...])
    }

    /// The key without its query and credentials, safe to log.
    public var description: String {
        var text = rawValue[...]
        if let credentials = text.firstRange(of: " credentials=") { text = text[..<credentials.lowerBound] }
        if let query = text.firstIndex(of: "?") { text = text[..<query] }
        return String(text)
    }
}
