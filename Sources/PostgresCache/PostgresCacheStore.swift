#if PostgreSQL
public import CourierCaching
internal import CourierCore
public import FoundationEssentials
public import Logging
public import PostgresNIO
public import ServiceLifecycle

/// A cache tier the processes of a fleet share, on PostgreSQL: put it behind memory (and disk)
/// in a ``TieredCache`` and every process reads what any of them stored.
///
/// ```swift
/// let store = PostgresCacheStore(postgres: .init(
///     host: "db.internal", username: "courier", password: secret, database: "cache", tls: .disable))
/// var configuration = RequestCoordinator.Configuration()
/// configuration.cache = TieredCache(stores: [try DiskCache(directory: cacheDirectory), store])
/// // Run the store's connection pool for as long as the coordinator is used:
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { await store.run() }
///     ...
/// }
/// ```
///
/// The store runs on a `PostgresClient` (postgres-nio's connection pool, at most
/// `options.maximumConnections` connections), which does nothing until its `run()` runs:
/// call ``run()`` in a long-lived task, or add the store to a swift-service-lifecycle
/// `ServiceGroup` (it is a `Service`), or pass a client you already run to
/// ``init(client:configuration:backgroundLogger:)``.
///
/// One table holds the entries, keyed by the SHA-256 digest of the cache key with the full key
/// stored and compared; others hold fleet-collapsing leases and host pauses. From the first
/// call, one connection of the pool listens to the fleet (``Configuration/notifications``):
/// loads waiting on a lease wake when its holder is done, and what another instance writes or
/// removes leaves this instance's memory and disk tiers. The store creates
/// them on first use and migrates them (a schema version is kept in a one-row table), in
/// ``Configuration/schema`` when one is set. It needs PostgreSQL 11 or later. Every row
/// carries a checksum checked on read: a row that fails it is a miss and is deleted. When rows
/// exceed ``Configuration/maximumBytes``, the least recently used go, in batches read from an
/// index on last access (each batch costs the same however many rows the table holds; the
/// size check before them sums that index).
///
/// Every call is bounded by ``Configuration/timeout``: with the server slow, down or refusing
/// connections, a call throws a `ServiceError` (`timedOut` or ``ServiceError/Code/cacheStoreFailed``)
/// within that time, the tiered cache reports it as a `storeFailed` event, and loads carry on
/// from the network. After a failure, calls fail at once for ``Configuration/pauseAfterFailure``
/// (1 s), so an outage costs one timeout per second, not one per call. The pool reconnects by
/// itself when the server comes back.
public final class PostgresCacheStore: CacheLeasing, CacheEventSource, CacheCoherenceSource, Service {
    /// The connection pool the store queries through.
    public let client: PostgresClient
    /// The store's settings.
    let configuration: Configuration
    /// Its tables' names.
    let tables: PostgresCacheTables
    let logger: Logger?
    /// Creates or migrates the schema, once (again after a failure).
    let schema = LockedValue<Task<Void, any Error>?>(nil)
    /// Bytes stored by this process since the size bound was last checked.
    let bytesSinceEvictionCheck = LockedValue(0)
    /// Whether an eviction runs in the background (one at a time).
    let evicting = LockedValue(false)
    /// Where the store's evictions are reported (a ``TieredCache`` forwards them to the
    /// coordinator's events).
    package let observers = CacheObservers()
    /// When the last call failed (nil: the last call succeeded), for
    /// ``Configuration/pauseAfterFailure``.
    let lastFailure = LockedValue<ContinuousClock.Instant?>(nil)
    /// The loads waiting on a lease, woken by the store's notifications.
    package let notifications = LeaseNotifications()
    /// What other instances stored or removed, heard on the store's channel.
    package let remoteChanges = RemoteChanges()
    /// Names this store in its notifications, so that it ignores its own.
    let instance = UUID().uuidString
    /// Purges the server missed, applied to reads at once and to the server when it answers.
    package let pendingPurges = LockedValue(PendingPurges())
    /// The task that listens for notifications, from the first call.
    let listener = LockedValue<Task<Void, Never>?>(nil)
    /// Whether the store listens: ``Configuration/notifications`` is on, the schema's name is
    /// taken, and the pool the store made for itself has a connection to spare.
    package let listens: Bool

    /// A store on `client`, which the caller runs (or runs through ``run()``). With
    /// ``Configuration/notifications`` on, one of its connections listens from the first call:
    /// give it at least two.
    public convenience init(
        client: PostgresClient, configuration: Configuration = .init(), backgroundLogger: Logger? = nil
    ) {
        self.init(client: client, configuration: configuration, backgroundLogger: backgroundLogger, connections: nil)
    }

    private init(client: PostgresClient, configuration: Configuration, backgroundLogger: Logger?, connections: Int?) {
        self.client = client
        self.configuration = configuration
        tables = PostgresCacheTables(schema: configuration.schema)
        logger = backgroundLogger
        // The listener holds a connection: a pool of one would have none left for the calls.
        listens = configuration.notifications && tables.problem == nil && (connections ?? 2) >= 2
    }

    /// A store on a pool of its own to the server `postgres` names; call ``run()`` to run it.
    public convenience init(
        postgres: PostgresClient.Configuration, configuration: Configuration = .init(), backgroundLogger: Logger? = nil
    ) {
        var postgres = postgres
        // The server stops a statement the store gave up on (its call timed out), so that it
        // cannot hold a connection of the pool, or commit late, long after: a few times the
        // call's bound. Schema set-up lifts it for its own transaction.
        if !postgres.options.additionalStartupParameters.contains(where: { $0.0 == "statement_timeout" }) {
            let bound = max(configuration.timeout * 4, configuration.evictionTimeout, .seconds(2))
            let milliseconds = bound.components.seconds * 1_000 + bound.components.attoseconds / 1_000_000_000_000_000
            postgres.options.additionalStartupParameters.append(("statement_timeout", "\(milliseconds)"))
        }
        let client =
            backgroundLogger.map { PostgresClient(configuration: postgres, backgroundLogger: $0) }
            ?? PostgresClient(configuration: postgres)
        self.init(
            client: client, configuration: configuration, backgroundLogger: backgroundLogger,
            connections: postgres.options.maximumConnections)
    }

    deinit {
        listener.withLock { $0?.cancel() }
    }

    /// `.shared`: every process of the fleet reads and writes the same rows.
    public var tier: CacheTier { .shared }

    /// Runs the connection pool until the calling task is cancelled (or the service group shuts
    /// down). Call it once, and not when the client passed to
    /// ``init(client:configuration:backgroundLogger:)`` runs elsewhere: postgres-nio's client
    /// traps when run twice.
    public func run() async {
        await client.run()
        stopListening()
    }

    public func entry(for key: CacheKey) async throws -> CachedResponse? {
        let found = try await call("a read") { store in try await store.row(for: key) }
        guard let row = found else { return nil }
        do {
            let response = try row.response()
            // Intact, but another key with the same digest: a miss that leaves the row alone.
            guard row.key == key.rawValue else { return nil }
            // Purges the server missed count already (none, usually).
            return pendingPurges.withLock { $0.waiting.isEmpty ? response : $0.applied(to: response, for: key) }
        } catch {
            // Corrupt: a miss, and the row goes (unless a writer has replaced it meanwhile).
            try await call("removing a corrupt row") { store in
                try await store.execute(
                    """
                    DELETE FROM \(unescaped: store.tables.entries)
                    WHERE key_digest = \(Self.digest(key)) AND checksum = \(row.checksum)
                    """)
            }
            return nil
        }
    }

    public func store(_ response: CachedResponse, for key: CacheKey) async throws {
        let row = PostgresCacheRow(response, key: key)
        let announcement = entryAnnouncement(key)
        let outcome = try await call("a write") { store in
            try await store.client.query(
                """
                WITH written AS (
                INSERT INTO \(unescaped: store.tables.entries) AS existing (key_digest, cache_key, variant, status, header_fields, body,
                    request_time, response_time, expires_at, size, checksum, last_access, url_digest, tags, purged_at)
                VALUES (\(Self.digest(key)), \(row.key), \(row.variant), \(row.status), \(row.fields), \(row.body),
                    \(row.requestTime), \(row.responseTime), \(row.expiresAt), \(row.size), \(row.checksum),
                    clock_timestamp(), \(row.urlDigest), \(row.tags), \(row.purgedAt))
                ON CONFLICT (key_digest) DO UPDATE SET cache_key = EXCLUDED.cache_key, variant = EXCLUDED.variant,
                    status = EXCLUDED.status, header_fields = EXCLUDED.header_fields, body = EXCLUDED.body,
                    request_time = EXCLUDED.request_time, response_time = EXCLUDED.response_time,
                    expires_at = EXCLUDED.expires_at, size = EXCLUDED.size, checksum = EXCLUDED.checksum,
                    last_access = EXCLUDED.last_access, url_digest = EXCLUDED.url_digest, tags = EXCLUDED.tags,
                    purged_at = CASE WHEN existing.purged_at > EXCLUDED.request_time AND EXCLUDED.purged_at IS NULL
                        THEN existing.purged_at ELSE EXCLUDED.purged_at END
                WHERE existing.response_time <= EXCLUDED.response_time
                RETURNING purged_at),
                announced AS (SELECT pg_notify(\(store.tables.channel), \(announcement)) FROM written
                    WHERE \(store.configuration.notifications))
                SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM announced),
                    (SELECT count(*) FROM written WHERE purged_at IS NOT NULL)
                """,
                logger: store.queryLogger
            ).decode((Int64, Int64, Int64).self).reduce(into: (kept: false, marked: false)) {
                $0 = ($0.kept || $1.0 > 0, $0.marked || $1.2 > 0)
            }
        }
        guard outcome.kept, outcome.marked == (row.purgedAt != nil) else {
            // Not kept: a newer response is stored (another instance's). Or kept with a soft
            // purge's mark this response was requested before (another instance's purge, which
            // already dropped the copies it replaced): either way the caches holding this store
            // drop the copies they just made, and read the shared row next.
            remoteChanges.notify(.entry(digest: key.digest, key: key))
            if outcome.kept, noteStored(bytes: Int(row.size)) { evictInBackground() }
            return
        }
        if noteStored(bytes: Int(row.size)) { evictInBackground() }
    }

    public func removeEntry(for key: CacheKey) async throws {
        let announcement = entryAnnouncement(key)
        try await call("a removal") { store in
            // Announced also when the row was gone: other instances may still hold copies.
            try await store.execute(
                """
                WITH removed AS (DELETE FROM \(unescaped: store.tables.entries) WHERE key_digest = \(Self.digest(key)))
                SELECT pg_notify(\(store.tables.channel), \(announcement)) WHERE \(store.configuration.notifications)
                """)
        }
    }

    /// Removes entries that expired at or before `now`, and expired leases, in one statement.
    public func removeExpired(now: Date) async throws {
        try await call("removing expired entries") { store in
            try await store.execute(
                """
                WITH leases AS (DELETE FROM \(unescaped: store.tables.leases) WHERE expires_at <= clock_timestamp())
                DELETE FROM \(unescaped: store.tables.entries) WHERE expires_at <= \(now.timeIntervalSince1970)
                """)
        }
    }

    public func removeAll() async throws {
        let announcement = "all \(instance)"
        try await call("removing every entry") { store in
            try await store.execute(
                """
                WITH removed AS (DELETE FROM \(unescaped: store.tables.entries))
                SELECT pg_notify(\(store.tables.channel), \(announcement)) WHERE \(store.configuration.notifications)
                """)
        }
    }

    /// The row stored for `key`; its last-access time is refreshed when older than
    /// ``Configuration/accessTimeResolution`` (so hot rows are not rewritten on every read).
    private func row(for key: CacheKey) async throws -> PostgresCacheRow? {
        let digest = Self.digest(key)
        let resolution = configuration.accessTimeResolution.seconds
        let rows = try await client.query(
            """
            SELECT cache_key, variant, status, header_fields, body, request_time, response_time, expires_at,
                checksum, last_access < clock_timestamp() - make_interval(secs => \(resolution)), purged_at
            FROM \(unescaped: tables.entries) WHERE key_digest = \(digest)
            """)
        var found: (row: PostgresCacheRow, stale: Bool)?
        for try await columns in rows.decode(
            (String, String?, Int16, Data, Data, Double, Double, Double?, Int64, Bool, Double?).self)
        {
            let row = PostgresCacheRow(
                key: columns.0, variant: columns.1, status: columns.2, fields: columns.3, body: columns.4,
                requestTime: columns.5, responseTime: columns.6, expiresAt: columns.7, checksum: columns.8,
                purgedAt: columns.10)
            found = (row, columns.9)
        }
        if let found, found.stale {
            try await execute(
                "UPDATE \(unescaped: tables.entries) SET last_access = clock_timestamp() WHERE key_digest = \(digest)")
        }
        return found?.row
    }

    /// Runs `work` once the schema is ready, the whole bounded by `limit`
    /// (``Configuration/timeout`` unless given); every failure becomes a `ServiceError`. A
    /// failed call pauses the calls after it (``Configuration/pauseAfterFailure``) unless it
    /// is a `background` one (an eviction): a slow eviction on a large table says nothing of
    /// how loads' calls will fare.
    func call<T: Sendable>(
        _ operation: String, limit: Duration? = nil, background: Bool = false,
        _ work: @escaping @Sendable (PostgresCacheStore) async throws -> T
    ) async throws(ServiceError) -> T {
        let pause = configuration.pauseAfterFailure
        if pause > .zero, let failed = lastFailure.withLock({ $0 }), failed.duration(to: .now) < pause {
            throw ServiceError(
                .cacheStoreFailed,
                "The PostgreSQL cache skipped \(operation): a call failed within the last \(pause) "
                    + "(Configuration.pauseAfterFailure).")
        }
        startListening()
        do {
            let result = try await CallDeadline.run(operation, limit: limit ?? configuration.timeout) {
                try await self.schemaReady()
                return try await work(self)
            }
            lastFailure.withLock { $0 = nil }
            applyWaitingPurgesInBackground()  // the server answers: the purges it missed
            return result
        } catch {
            let failure = Self.failure(error, operation: operation)
            if failure.code != .cancelled, !background { lastFailure.withLock { $0 = .now } }
            if Self.tablesChanged(error) { schema.withLock { $0 = nil } }  // the next call sets them up again
            throw failure
        }
    }

    /// Whether `error` says the tables are gone or not as this store made them (dropped by an
    /// operator, or by another version's migration): then the schema is set up again.
    static func tablesChanged(_ error: any Error) -> Bool {
        let underlying = (error as? ServiceError)?.underlying ?? error
        guard let state = (underlying as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        // undefined_table, undefined_column, datatype_mismatch
        return ["42P01", "42703", "42804"].contains(state)
    }

    /// Runs a statement whose rows nobody reads, to its end (so that its errors surface here).
    func execute(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: queryLogger) {}
    }

    /// Postgres-nio logs queries at `.debug`; it gets the background logger only at `.trace`.
    var queryLogger: Logger? { logger.flatMap { $0.logLevel <= .trace ? $0 : nil } }

    /// The key's SHA-256 digest, the table's primary key.
    static func digest(_ key: CacheKey) -> Data { Data(SHA256.hash(key.rawValue.utf8)) }

    static func failure(_ error: any Error, operation: String) -> ServiceError {
        switch error {
        case let error as ServiceError:
            return error
        case is CancellationError:
            return .cancelled("The cache call was cancelled.")
        case let error as PSQLError:
            var detail = "\(error.code)"
            if let state = error.serverInfo?[.sqlState] { detail += ", SQLSTATE \(state)" }
            if let message = error.serverInfo?[.message] { detail += ": \(message)" }
            return ServiceError(
                .cacheStoreFailed, "The PostgreSQL cache failed \(operation) (\(detail)).", underlying: error)
        default:
            return ServiceError(
                .cacheStoreFailed, "The PostgreSQL cache failed \(operation) (\(error)).", underlying: error)
        }
    }
}

extension Duration {
    /// The duration in seconds, as `make_interval(secs =>)` takes it.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
#endif
