internal import FoundationEssentials
internal import HTTPTypes

/// The identity of a transfer other loads may join: method, scheme, authority, path, the
/// header fields that vary the response (credentials included, so two users never share),
/// the body with its content type, the partitions decorators name (a cookie jar's user, which
/// must split loads even before the jar holds a cookie) and, in mock mode, the resource type.
///
/// Its hash is computed once, with ``KeyHasher`` (a few instructions per 8 bytes, where
/// `Hasher` took some 2,000 per load), and only picks a bucket: `==` compares every part in
/// full, so two different requests never share a transfer even when their hashes collide. Building a key copies nothing (the request's storage is shared, not copied).
///
/// A key holds raw values, credentials included, for as long as its flight is joinable: the
/// flight table drops it when the transfer lands or its last waiter leaves. It is never logged,
/// and nothing outlives the load that made it.
struct FlightKey: Hashable, Sendable {
    /// The parts, in one object: the flight table copies a key three or four times per load,
    /// and a copy is then one retain rather than one per part.
    private final class Parts: Sendable {
        let request: HTTPRequest
        /// The header fields left out of the identity (tracing and request ids).
        let ignoring: [HTTPField.Name]
        let contentType: String?
        let body: Data?
        /// Tells apart resource types that share a URL in mock mode.
        let tag: String?
        /// Identities decorators add, so that loads of different partitions never share.
        let partitions: [String]

        init(
            request: HTTPRequest, ignoring: [HTTPField.Name], contentType: String?, body: Data?, tag: String?,
            partitions: [String]
        ) {
            self.request = request
            self.ignoring = ignoring
            self.contentType = contentType
            self.body = body
            self.tag = tag
            self.partitions = partitions
        }
    }

    private let parts: Parts
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
        let contentType = body?.contentType
        parts = Parts(
            request: request, ignoring: ignoring, contentType: contentType, body: bytes, tag: tag,
            partitions: partitions)
        var hasher = KeyHasher()
        hasher.combine(tag)
        hasher.combine(UInt64(partitions.count))
        for partition in partitions { hasher.combine(partition) }
        hasher.combine(request.method.rawValue)
        hasher.combine(request.scheme)
        hasher.combine(request.authority)
        hasher.combine(request.path)
        for field in request.headerFields where !ignoring.contains(field.name) {
            hasher.combine(field.name.canonicalName)
            field.withUnsafeBytesOfValue { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
        hasher.combine(contentType)
        if let bytes { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
        storedHash = Int(truncatingIfNeeded: hasher.value)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(storedHash) }

    static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
        guard lhs.storedHash == rhs.storedHash else { return false }
        let (l, r) = (lhs.parts, rhs.parts)
        if l === r { return true }
        guard l.tag == r.tag, l.partitions == r.partitions, l.request.method == r.request.method,
            l.request.scheme == r.request.scheme, l.request.authority == r.request.authority,
            l.request.path == r.request.path, l.contentType == r.contentType, l.body == r.body,
            l.ignoring == r.ignoring
        else { return false }
        return sameFields(l.request.headerFields, r.request.headerFields, ignoring: l.ignoring)
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

/// A seeded 64-bit hash over bytes, 8 at a time, with wyhash's folded multiply: each word is
/// mixed with the state by a full 64x64-bit product whose halves are folded together.
///
/// Good enough to pick buckets, and cheap: `Dictionary` hashes the result again with its own
/// seeded `Hasher`, and `FlightKey`'s `==` compares in full. The seed is random per process, so
/// inputs that collide cannot be computed ahead of time. Each part is preceded by its length
/// (and an optional's presence), so parts never run into each other.
struct KeyHasher {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    private(set) var value = KeyHasher.seed

    mutating func combine(_ word: UInt64) {
        let product = (value ^ word).multipliedFullWidth(by: Self.multiplier)
        value = product.high ^ product.low
    }

    mutating func combine(bytes: UnsafeRawBufferPointer) {
        combine(UInt64(bytes.count))
        var offset = 0
        while offset + 8 <= bytes.count {
            combine(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail = tail << 8 | UInt64(bytes[index]) }
            combine(tail)
        }
    }

    mutating func combine(_ text: String) {
        var text = text
        text.withUTF8 { combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    mutating func combine(_ text: String?) {
        guard let text else { return combine(UInt64.max) }
        combine(text)
    }
}
