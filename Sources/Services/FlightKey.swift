internal import FoundationEssentials
internal import HTTPTypes

/// The identity of a transfer other loads may join: method, scheme, authority, path, the
/// header fields that vary the response (credentials included, so two users never share),
/// the body with its content type, the partitions decorators name (a cookie jar's user, which
/// must split loads even before the jar holds a cookie) and, in mock mode, the resource type.
///
/// Its hash is computed once, with `Hasher`, and only picks a bucket: `==` compares every
/// part in full, so two different requests never share a transfer even when their hashes
/// collide. Building a key copies nothing (the request's storage is shared, not copied).
///
/// A key holds raw values, credentials included, for as long as its flight is joinable: the
/// flight table drops it when the transfer lands or its last waiter leaves. It is never logged,
/// and nothing outlives the load that made it.
struct FlightKey: Hashable, Sendable {
    let request: HTTPRequest
    /// The header fields left out of the identity (tracing and request ids).
    let ignoring: [HTTPField.Name]
    let contentType: String?
    let body: Data?
    /// Tells apart resource types that share a URL in mock mode.
    let tag: String?
    /// Identities decorators add, so that loads of different partitions never share.
    let partitions: [String]
    /// The hash of every part, computed once; internal so that a test can force a collision.
    var storedHash: Int

    /// The key of `request` with `body`, or nil when the body is streamed from a file (such a
    /// request is never compared, so it never shares).
    init?(
        _ request: HTTPRequest, body: RequestBody?, ignoring: [HTTPField.Name], tag: String? = nil,
        partitions: [String] = []
    ) {
        var bytes: Data?
        if let body {
            guard let inMemory = body.inMemoryBytes else { return nil }
            bytes = inMemory
        }
        self.request = request
        self.ignoring = ignoring
        self.contentType = body?.contentType
        self.body = bytes
        self.tag = tag
        self.partitions = partitions
        var hasher = Hasher()
        hasher.combine(tag)
        hasher.combine(partitions)
        hasher.combine(request.method)
        hasher.combine(request.scheme)
        hasher.combine(request.authority)
        hasher.combine(request.path)
        for field in request.headerFields where !ignoring.contains(field.name) {
            hasher.combine(field.name)
            field.withUnsafeBytesOfValue { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
        hasher.combine(contentType)
        if let bytes {
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
        storedHash = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) { hasher.combine(storedHash) }

    static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
        guard lhs.storedHash == rhs.storedHash, lhs.tag == rhs.tag, lhs.partitions == rhs.partitions,
            lhs.request.method == rhs.request.method,
            lhs.request.scheme == rhs.request.scheme, lhs.request.authority == rhs.request.authority,
            lhs.request.path == rhs.request.path, lhs.contentType == rhs.contentType, lhs.body == rhs.body,
            lhs.ignoring == rhs.ignoring
        else { return false }
        return sameFields(lhs.request.headerFields, rhs.request.headerFields, ignoring: lhs.ignoring)
    }

    /// Whether both have the same fields, in the same order, once ignored names are left out.
    private static func sameFields(_ lhs: HTTPFields, _ rhs: HTTPFields, ignoring: [HTTPField.Name]) -> Bool {
        var left = lhs.lazy.filter { !ignoring.contains($0.name) }.makeIterator()
        var right = rhs.lazy.filter { !ignoring.contains($0.name) }.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let l?, let r?): if l.name != r.name || l.value != r.value { return false }
            default: return false
            }
        }
    }
}
