internal import CourierCore
package import FoundationEssentials
internal import HTTPTypes

/// What a purge removes (or, soft, marks stale): the entries of one URL, or those whose
/// response named one tag. ``TieredCache/purge(url:soft:)`` and ``TieredCache/purge(tag:soft:)``
/// make one; stores that can apply it adopt ``CachePurging``.
package enum PurgeTarget: Sendable, Hashable {
    /// Every entry whose key is this URL (`scheme://authority/path?query`), whatever its method
    /// or credentials.
    case url(String)
    /// The same, named by the lower-case hex SHA-256 of the URL (a notification too short to
    /// carry the URL itself).
    case urlDigest(String)
    /// Every entry whose response named this tag in `Surrogate-Key` or `Cache-Tag`.
    case tag(String)

    /// Whether the entry of `key`, holding `response`, is one this purge names.
    package func matches(_ key: CacheKey, _ response: CachedResponse) -> Bool {
        matches(url: key.url, tags: response.tags)
    }

    /// Whether the entry of a key with URL `url` and tags `tags` is one this purge names (the
    /// tags are read only for a tag's purge).
    package func matches(url: Substring, tags: @autoclosure () -> [String]) -> Bool {
        switch self {
        case .url(let wanted): url == wanted
        case .urlDigest(let digest): SHA256.hex(SHA256.hash(url.utf8)) == digest
        case .tag(let tag): tags().contains(tag)
        }
    }

    /// The keys a store without ``CachePurging`` can still remove: a URL's `GET` and `HEAD`
    /// entries without credentials (none for a tag or a digest).
    var plainKeys: [CacheKey] {
        guard case .url(let url) = self else { return [] }
        return ["GET", "HEAD"].map { CacheKey("\($0) \(url)") }
    }

    /// The URL text a purge compares with keys: `scheme://authority/path?query` as the request
    /// had it, the scheme in lower case, `/` for an empty path, without a fragment; nil when
    /// `text` is not an absolute `http` or `https` URL.
    package static func normalizedURL(_ text: String) -> String? {
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        var rest = text[separator.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<pathStart]
        guard !authority.isEmpty,
            rest.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        let target = rest[pathStart...]
        let slash = target.first == "/" ? "" : "/"
        return "\(scheme)://\(authority)\(slash)\(target)"
    }

    /// Whether `tag` can be named by a purge and a response: 1 to 1,024 visible ASCII
    /// characters other than a comma.
    package static func isValidTag(_ tag: some StringProtocol) -> Bool {
        tag.utf8.count <= 1_024 && !tag.isEmpty && tag.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x2C }
    }
}

/// A store that can apply a purge itself (``DiskCache``, the PostgreSQL store): a
/// ``TieredCache`` hands it every purge. A store without it loses a purged URL's `GET` and
/// `HEAD` entries (``CacheStore/removeEntry(for:)``) and keeps what a tag names.
package protocol CachePurging: CacheStore {
    /// Removes the entries `target` names or, `soft`, marks them stale from `now`
    /// (``CachedResponse/purgedAt``); returns how many.
    func purge(_ target: PurgeTarget, soft: Bool, now: Date) async throws -> Int
}

extension CacheKey {
    /// The key's URL: its text between the method and the credentials' digest.
    package var url: Substring { Self.url(ofRaw: rawValue) }

    /// The URL of the key whose text is `rawValue`.
    package static func url(ofRaw rawValue: String) -> Substring {
        var text = rawValue[...]
        if let space = text.firstIndex(of: " ") { text = text[text.index(after: space)...] }
        if let credentials = text.firstRange(of: " credentials=") { text = text[..<credentials.lowerBound] }
        return text
    }
}

extension CachedResponse {
    /// The tags a purge can name this response by: the members of `Surrogate-Key` (separated
    /// by spaces or tabs) and of `Cache-Tag` (separated by commas), each 1 to 1,024 visible ASCII
    /// characters other than a comma; others are ignored, and so is any tag past the 256th.
    package var tags: [String] { Self.tags(in: headerFields) }

    /// The tags of a response with these header fields (``tags``).
    static func tags(in headerFields: HTTPFields) -> [String] { parseTags(in: headerFields).tags }

    /// The tags of a response with these header fields, and the members of its `Surrogate-Key`
    /// and `Cache-Tag` fields that are ignored: not a valid tag
    /// (``PurgeTarget/isValidTag(_:)``), or past the 256th tag.
    package static func parseTags(in headerFields: HTTPFields) -> (tags: [String], ignored: [String]) {
        var tags: [String] = []
        var ignored: [String] = []
        for field in headerFields where field.name == .surrogateKey || field.name == .cacheTag {
            let byComma = field.name == .cacheTag
            for member in field.value.split(whereSeparator: { byComma ? $0 == "," : $0 == " " || $0 == "\t" }) {
                let tag = String(member.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
                guard !tags.contains(tag) else { continue }
                guard tags.count < 256, PurgeTarget.isValidTag(tag) else {
                    if !tag.isEmpty { ignored.append(tag) }
                    continue
                }
                tags.append(tag)
            }
        }
        return (tags, ignored)
    }

    /// Whether a soft purge at `now` changes this entry: it is not marked already, and it was
    /// requested before `now` (a response requested after a purge is not what it named).
    package func isMarkable(at now: Date) -> Bool {
        requestTime < now && (purgedAt.map { $0 > now } ?? true)
    }

    /// The same entry marked stale from `now` by a soft purge (unless ``isMarkable(at:)`` is false).
    package func purged(at now: Date) -> CachedResponse {
        guard isMarkable(at: now) else { return self }
        var marked = self
        marked.purgedAt = now
        return marked
    }

    /// The mark that counts: one made after the request was sent (an older one, from a clock
    /// that disagrees or a write that raced the purge, says nothing of this response).
    package var effectivePurge: Date? {
        guard let purgedAt, purgedAt > requestTime else { return nil }
        return purgedAt
    }
}

extension HTTPField.Name {
    /// `Surrogate-Key`: tags a CDN purges by (Fastly's form, separated by spaces).
    static let surrogateKey = HTTPField.Name("Surrogate-Key")!
    /// `Cache-Tag`: tags a CDN purges by (Cloudflare's form, separated by commas).
    static let cacheTag = HTTPField.Name("Cache-Tag")!
}
