#if PostgreSQL
public import CourierCaching
internal import FoundationEssentials
internal import PostgresNIO

extension PostgresCacheStore: HostPausing {
    /// Pauses `host` for the fleet for `duration` from now on the server's clock, unless a
    /// longer pause is on; drops pauses that ended.
    public func pauseHost(_ host: String, for duration: Duration) async throws {
        try await call("pausing a host") { store in
            try await store.execute(
                """
                INSERT INTO \(unescaped: store.tables.pauses) AS existing (host, until)
                VALUES (\(host), clock_timestamp() + make_interval(secs => \(duration.seconds)))
                ON CONFLICT (host) DO UPDATE SET until = GREATEST(existing.until, EXCLUDED.until)
                """)
            try await store.execute("DELETE FROM \(unescaped: store.tables.pauses) WHERE until < clock_timestamp()")
        }
    }

    /// The hosts paused now, each with the time its pause has left on the server's clock.
    public func hostPauses() async throws -> [String: Duration] {
        try await call("reading host pauses") { store in
            var pauses: [String: Duration] = [:]
            let rows = try await store.client.query(
                """
                SELECT host, extract(epoch FROM until - clock_timestamp())::float8 FROM \(unescaped: store.tables.pauses)
                WHERE until > clock_timestamp()
                """,
                logger: store.queryLogger)
            for try await (host, seconds) in rows.decode((String, Double).self) {
                pauses[host] = .milliseconds(Int64(seconds * 1_000))
            }
            return pauses
        }
    }
}
#endif
