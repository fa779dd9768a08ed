#if PostgreSQL
package import CourierCaching
internal import CourierCore
package import FoundationEssentials
internal import PostgresNIO

extension PostgresCacheStore: CachePurging {
    /// Removes the rows `target` names or, `soft`, marks them stale from `now` (a row marked
    /// earlier keeps its mark; a row requested after `now` is not marked), and announces the purge in the same statement, so that every
    /// other instance drops its own copies (``Configuration/notifications``). Rows are found
    /// by an index on the URL's digest, or on the tags.
    package func purge(_ target: PurgeTarget, soft: Bool, now: Date) async throws -> Int {
        let announcement = purgeAnnouncement(target, soft: soft)
        let mark = now.timeIntervalSince1970
        return try await call("a purge") { store in
            let entries = store.tables.entries
            let channel = store.tables.channel
            let notifies = store.configuration.notifications
            let query: PostgresQuery
            switch (target, soft) {
            case (.url, false), (.urlDigest, false):
                query = try """
                WITH purged AS (DELETE FROM \(unescaped: entries) WHERE url_digest = \(Self.urlDigest(target)) RETURNING 1),
                announced AS (SELECT pg_notify(\(channel), \(announcement)) WHERE \(notifies))
                SELECT (SELECT count(*) FROM purged), (SELECT count(*) FROM announced)
                """
            case (.url, true), (.urlDigest, true):
                query = try """
                WITH purged AS (UPDATE \(unescaped: entries) SET purged_at = \(mark)
                    WHERE url_digest = \(Self.urlDigest(target)) AND request_time < \(mark)
                        AND (purged_at IS NULL OR purged_at > \(mark))
                    RETURNING 1),
                announced AS (SELECT pg_notify(\(channel), \(announcement)) WHERE \(notifies))
                SELECT (SELECT count(*) FROM purged), (SELECT count(*) FROM announced)
                """
            case (.tag(let tag), false):
                query = """
                    WITH purged AS (DELETE FROM \(unescaped: entries) WHERE tags @> \([tag]) RETURNING 1),
                    announced AS (SELECT pg_notify(\(channel), \(announcement)) WHERE \(notifies))
                    SELECT (SELECT count(*) FROM purged), (SELECT count(*) FROM announced)
                    """
            case (.tag(let tag), true):
                query = """
                    WITH purged AS (UPDATE \(unescaped: entries) SET purged_at = \(mark)
                        WHERE tags @> \([tag]) AND request_time < \(mark)
                            AND (purged_at IS NULL OR purged_at > \(mark)) RETURNING 1),
                    announced AS (SELECT pg_notify(\(channel), \(announcement)) WHERE \(notifies))
                    SELECT (SELECT count(*) FROM purged), (SELECT count(*) FROM announced)
                    """
            }
            var purged = 0
            for try await counts in try await store.client.query(query, logger: store.queryLogger).decode(
                (Int64, Int64).self)
            {
                purged = Int(counts.0)
            }
            return purged
        }
    }

    /// The SHA-256 of a purge's URL, as the rows' `url_digest` holds it.
    static func urlDigest(_ target: PurgeTarget) -> Data {
        switch target {
        case .url(let url): Data(SHA256.hash(url.utf8))
        case .urlDigest(let hex): Data(hexadecimal: hex)
        case .tag: Data()
        }
    }

    /// `purge <instance> hard|soft url <url>`, `… urlDigest <hex>` (a URL past 7,800 bytes) or
    /// `… tag <tag>`.
    func purgeAnnouncement(_ target: PurgeTarget, soft: Bool) -> String {
        let head = "purge \(instance) \(soft ? "soft" : "hard")"
        switch target {
        case .url(let url) where url.utf8.count <= 7_800: return "\(head) url \(url)"
        case .url(let url): return "\(head) urlDigest \(SHA256.hex(SHA256.hash(url.utf8)))"
        case .urlDigest(let digest): return "\(head) urlDigest \(digest)"
        case .tag(let tag): return "\(head) tag \(tag)"
        }
    }

    /// The target a `purge` notification names (its words after the instance), or nil.
    static func purgeTarget(kind: Substring, value: Substring) -> PurgeTarget? {
        switch kind {
        case "url": PurgeTarget.normalizedURL(String(value)).map { .url($0) }
        case "urlDigest" where value.utf8.count == 64 && value.utf8.allSatisfy(\.isHexDigit): .urlDigest(String(value))
        case "tag" where PurgeTarget.isValidTag(value): .tag(String(value))
        default: nil
        }
    }
}

extension UInt8 {
    /// `0-9`, `a-f` (lower case, as digests are written).
    fileprivate var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x61...0x66).contains(self) }
}

extension Data {
    /// The bytes of lower-case hex text of even length (an invalid pair reads as 0).
    fileprivate init(hexadecimal text: String) {
        let digits = Array(text.utf8)
        self.init(
            stride(from: 0, to: digits.count - 1, by: 2).map { index in
                UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) ?? 0
            })
    }
}
#endif
