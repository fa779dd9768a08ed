#if PostgreSQL
package import CourierCaching
internal import CourierCore
package import FoundationEssentials
internal import PostgresNIO

extension PostgresCacheStore: CachePurging {
    /// Removes the rows `target` names or, `soft`, marks them stale from `now` (a row marked
    /// earlier keeps its mark; a row requested after `now` is not marked), and announces the
    /// purge in the same statement, so that every other instance drops its own copies
    /// (``Configuration/notifications``). Rows are found by an index on the URL's digest, or on
    /// the tags.
    ///
    /// When the call fails for a reason that passes (the server down or slow), the purge waits
    /// in ``pendingPurges``: reads apply it at once, and it reaches the server as soon as that
    /// answers again; the error thrown says so.
    package func purge(_ target: PurgeTarget, soft: Bool, now: Date) async throws -> Int {
        let purge = PendingPurges.Purge(target, soft: soft, now: now)
        let outcome: Result<Int, ServiceError>
        do {
            outcome = .success(try await call("a purge") { store in try await store.apply(purge, replayed: false) })
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let count):
            return count
        case .failure(let error) where !Self.missedTheServer(error):
            throw error
        case .failure(var error):
            wait(purge)
            error.message += " The purge is applied when the server answers again."
            throw error
        }
    }

    /// Whether a failed call may not have been applied for a reason that passes: the server
    /// was down, slow past the call's limit, skipped after a failure, or answered "not now"
    /// (SQLSTATE classes 08 connection, 40 rollback, 53 resources, 57 operator intervention,
    /// `25006` a read-only standby, `55P03` a lock). Not when it refused the statement otherwise
    /// (a permission, say), which applying it again would meet again; nor when the call was
    /// cancelled or the pool shut down.
    static func missedTheServer(_ error: ServiceError) -> Bool {
        guard error.code != .cancelled else { return false }
        guard let underlying = error.underlying else { return true }
        if isShutDown(underlying) { return false }
        guard let info = (underlying as? PSQLError)?.serverInfo else { return true }
        guard let state = info[.sqlState] else { return false }
        return ["08", "40", "53", "57"].contains(String(state.prefix(2))) || state == "25006" || state == "55P03"
    }

    /// Runs one purge's statement (not bounded: the caller is). A `replayed` hard purge (one
    /// that waited for the server) leaves rows requested after it: they are newer than what it
    /// named.
    func apply(_ purge: PendingPurges.Purge, replayed: Bool) async throws -> Int {
        let (target, soft) = (purge.target, purge.soft)
        let announcement = purgeAnnouncement(target, soft: soft)
        let mark = purge.now.timeIntervalSince1970
        let entries = tables.entries
        let channel = tables.channel
        let notifies = configuration.notifications
        let query: PostgresQuery
        switch (target, soft) {
        case (.url, false), (.urlDigest, false):
            query = try """
            WITH purged AS (DELETE FROM \(unescaped: entries) WHERE url_digest = \(Self.urlDigest(target))
                AND (\(!replayed) OR request_time < \(mark)) RETURNING 1),
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
                WITH purged AS (DELETE FROM \(unescaped: entries) WHERE tags @> \([tag])
                    AND (\(!replayed) OR request_time < \(mark)) RETURNING 1),
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
        for try await counts in try await client.query(query, logger: queryLogger).decode((Int64, Int64).self) {
            purged = Int(counts.0)
        }
        return purged
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
