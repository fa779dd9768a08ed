#if PostgreSQL
public import CourierCaching
internal import FoundationEssentials
internal import PostgresNIO

extension PostgresCacheStore {
    /// Takes the lease on `key` for `duration` unless another holder's lease is live: one
    /// statement inserts the lease row, or takes over an expired one. Expiry is on the
    /// server's clock, so the fleet agrees on it; a holder that dies blocks the others for no
    /// longer than `duration`.
    public func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease? {
        let token = UUID().uuidString
        let granted = try await call("taking a lease") { store in
            try await store.client.query(
                """
                INSERT INTO \(unescaped: store.tables.leases) AS existing (key_digest, token, expires_at)
                VALUES (\(Self.digest(key)), \(token), clock_timestamp() + make_interval(secs => \(duration.seconds)))
                ON CONFLICT (key_digest) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
                    WHERE existing.expires_at <= clock_timestamp()
                RETURNING token
                """,
                logger: store.queryLogger
            ).decode(String.self).reduce(into: [String]()) { $0.append($1) }
        }
        return granted.first == token ? CacheLease(key: key, token: token) : nil
    }

    /// Gives the lease back; does nothing when it expired and another holder has taken it
    /// since. The fleet's loads waiting on it learn whether an entry for the key is stored
    /// (else they take the lease again: see ``releaseLease(_:answered:)``).
    public func releaseLease(_ lease: CacheLease) async throws {
        try await releaseLease(lease, answered: false)
    }

    /// Gives the lease back and tells the fleet's loads waiting on it (`NOTIFY`) what the
    /// holder left: an entry for the key (`stored`), an answer that could not be stored
    /// (`notStored`: they all go to the origin), or nothing (`failed`: one takes the lease).
    package func releaseLease(_ lease: CacheLease, answered: Bool) async throws {
        let empty = answered ? " notStored" : " failed"
        try await call("releasing a lease") { store in
            try await store.execute(
                """
                WITH released AS (
                    DELETE FROM \(unescaped: store.tables.leases)
                    WHERE key_digest = \(Self.digest(lease.key)) AND token = \(lease.token)
                    RETURNING key_digest)
                SELECT pg_notify(\(store.tables.channel), 'lease ' || encode(released.key_digest, 'hex')
                    || CASE WHEN EXISTS (SELECT 1 FROM \(unescaped: store.tables.entries) AS entries
                        WHERE entries.key_digest = released.key_digest
                        AND (entries.expires_at IS NULL
                            OR entries.expires_at > extract(epoch FROM clock_timestamp())))
                    THEN ' stored' ELSE \(empty) END)
                FROM released WHERE \(store.configuration.notifications)
                """)
        }
    }
}
#endif
