#if PostgreSQL
internal import CourierCore
internal import Logging
internal import PostgresNIO

extension PostgresCacheStore {
    /// The version of the tables this store reads and writes.
    static let schemaVersion: Int32 = 4
    /// The advisory lock key (any constant) that serializes schema set-up across a fleet.
    static let schemaLockKey: Int64 = 0x436F_7572_6965_7231  // "Courier1"

    /// Creates the tables, or migrates them from an older version, before the first call; each
    /// process of a fleet may do so at once. Calls do this themselves (within their time
    /// limit); call it at start-up to pay for it there, with a limit of your own.
    ///
    /// Throws `ServiceError` ``ServiceError/Code/cacheStoreFailed`` when the server refuses, or
    /// when the tables belong to a newer version of the store (the store never downgrades them).
    public func prepare() async throws(ServiceError) {
        do { try await schemaReady() } catch { throw Self.failure(error, operation: "setting up its tables") }
    }

    /// Waits for the schema set-up, starting it when none has succeeded yet. The set-up runs in
    /// a task of its own, so a call that times out leaves it running for the next one.
    func schemaReady() async throws {
        let task: Task<Void, any Error> = schema.withLock { task in
            if let task { return task }
            // Bounded too, so that a server that stops answering mid-migration cannot wedge every
            // later call behind it.
            let limit = max(self.configuration.timeout, .seconds(30))
            let started = Task {
                try await CallDeadline.run("setting up its tables", limit: limit) { try await self.migrate() }
            }
            task = started
            return started
        }
        do {
            try await task.value
        } catch {
            schema.withLock { if $0 == task { $0 = nil } }  // the next call tries again
            throw error
        }
    }

    /// In one transaction, under an advisory lock: reads the version; at ours, done; older (or
    /// tables without a version), the tables are dropped and created again (a cache's rows can
    /// always be fetched again); newer, an error.
    private func migrate() async throws {
        if let problem = tables.problem { throw ServiceError(.cacheStoreFailed, problem) }
        let tables = self.tables
        try await client.withTransaction(logger: queryLogger ?? Self.silent) { connection in
            let logger = self.queryLogger ?? Self.silent
            // Its own deadline bounds the set-up, not the session's statement_timeout.
            try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.schemaLockKey))", logger: logger)
            if let schema = tables.schema, let quoted = tables.quotedSchema {
                // Looked up first: CREATE SCHEMA IF NOT EXISTS needs the right to create schemas
                // even when it exists, which a role given only its own schema lacks.
                let exists =
                    try await connection.query(
                        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = \(schema))", logger: logger
                    ).collect().first?.decode(Bool.self) ?? false
                if !exists {
                    try await connection.query("CREATE SCHEMA IF NOT EXISTS \(unescaped: quoted)", logger: logger)
                }
            }
            var found: Int32?
            let exists =
                try await connection.query(
                    "SELECT to_regclass(\(tables.version)) IS NOT NULL", logger: logger
                ).collect().first?.decode(Bool.self) ?? false
            if exists {
                for try await version in try await connection.query(
                    "SELECT version FROM \(unescaped: tables.version)", logger: logger
                ).decode(Int32.self) {
                    found = version
                }
            }
            if let found, found > Self.schemaVersion {
                throw ServiceError(
                    .cacheStoreFailed,
                    "The PostgreSQL cache's tables are at schema version \(found), newer than this store's "
                        + "\(Self.schemaVersion): upgrade Courier, or point the store at another database.")
            }
            guard found != Self.schemaVersion else { return }
            for statement in Self.dropStatements(tables) + Self.createStatements(tables) {
                try await connection.query(statement, logger: logger)
            }
            try await connection.query(
                "INSERT INTO \(unescaped: tables.version) (version) VALUES (\(Self.schemaVersion))", logger: logger)
        }
    }

    static func dropStatements(_ tables: PostgresCacheTables) -> [PostgresQuery] {
        [tables.entries, tables.leases, tables.pauses, tables.version].map { "DROP TABLE IF EXISTS \(unescaped: $0)" }
    }

    /// Version 4 (version 3 had no URL digest, tags or soft-purge mark for purges; version 2's
    /// index on last access did not hold each row's size, so a check of the bound read the
    /// whole table; version 1 had no host pauses). Times the tiered cache compares (request,
    /// response, expiry) are seconds since 1970 from the writer's clock, as `CachedResponse`
    /// holds them; last access, lease expiry and the end of a host's pause come from the
    /// server's clock, one clock for the whole fleet.
    static func createStatements(_ tables: PostgresCacheTables) -> [PostgresQuery] {
        [
            """
            CREATE TABLE \(unescaped: tables.entries) (
                key_digest bytea PRIMARY KEY,
                cache_key text NOT NULL,
                variant text,
                status smallint NOT NULL,
                header_fields bytea NOT NULL,
                body bytea NOT NULL,
                request_time double precision NOT NULL,
                response_time double precision NOT NULL,
                expires_at double precision,
                size bigint NOT NULL,
                checksum bigint NOT NULL,
                last_access timestamptz NOT NULL,
                url_digest bytea NOT NULL,
                tags text[] NOT NULL,
                purged_at double precision
            )
            """,
            // Purges name rows by URL (every method's and user's entry) or by tag.
            "CREATE INDEX courier_cache_entries_url ON \(unescaped: tables.entries) (url_digest)",
            "CREATE INDEX courier_cache_entries_tags ON \(unescaped: tables.entries) USING gin (tags)",
            // Eviction reads it in order (the oldest rows, a batch at a time) and sums its sizes
            // (an index-only scan, not the whole table).
            """
            CREATE INDEX courier_cache_entries_last_access ON \(unescaped: tables.entries) (last_access, key_digest)
                INCLUDE (size)
            """,
            """
            CREATE INDEX courier_cache_entries_expires_at ON \(unescaped: tables.entries) (expires_at)
                WHERE expires_at IS NOT NULL
            """,
            """
            CREATE TABLE \(unescaped: tables.leases) (
                key_digest bytea PRIMARY KEY,
                token text NOT NULL,
                expires_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE \(unescaped: tables.pauses) (
                host text PRIMARY KEY,
                until timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE \(unescaped: tables.version) (
                version integer NOT NULL,
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
            )
            """,
        ]
    }

    static let silent = Logger(label: "courier.postgres-cache", factory: { _ in SwiftLogNoOpLogHandler() })
}
#endif
