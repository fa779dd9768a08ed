#if PostgreSQL
extension PostgresCacheStore {
    /// How the store bounds its calls and its size. Every property has a production default.
    public struct Configuration: Sendable {
        /// The longest a call (a read, a write, a lease, schema set-up included) may take before it
        /// throws `timedOut`: a slow or unreachable server costs a load this much, never more.
        /// 250 ms by default.
        public var timeout: Duration = .milliseconds(250)
        /// The most bytes the entries may occupy (body, header fields and key, plus a small
        /// overhead per row); beyond it the least recently used rows are removed. 256 MiB by
        /// default; nil for no bound.
        public var maximumBytes: Int? = 256 << 20
        /// Bytes this process stores between two checks of ``maximumBytes`` (a check sums every
        /// row's size from an index, so it is not done on every write). nil by default: a twentieth of
        /// ``maximumBytes``. Each process checks on its own, so a fleet of N may overshoot the bound
        /// by up to N times this until the next check.
        public var evictionCheckInterval: Int?
        /// Rows removed per eviction statement (statements repeat until the bound holds). 500 by
        /// default.
        public var evictionBatchSize = 500
        /// The longest one eviction statement may take: the size check (a sum over the index on
        /// last access) or one batch (the oldest ``evictionBatchSize`` rows, read from that
        /// index). Evictions run in the background, off every load's path, so ``timeout`` does
        /// not bound them. 2 s by default. The pool the store makes for itself asks the server
        /// to stop statements after the longest of this, 4 × ``timeout`` and 2 s (its
        /// `statement_timeout`); a client you pass in keeps its own.
        public var evictionTimeout: Duration = .seconds(2)
        /// A read refreshes a row's last-access time (its place in the LRU order) only when that
        /// time is older than this, so that hot rows are not rewritten on every hit. 10 s by default.
        public var accessTimeResolution: Duration = .seconds(10)

        /// After a call fails (times out, or the server refuses it), later calls fail at once,
        /// without asking the server, for this long: an outage then costs loads one timeout per
        /// pause instead of one per call. 1 s by default; `.zero` to always ask.
        public var pauseAfterFailure: Duration = .seconds(1)

        /// The PostgreSQL schema that holds the store's tables, created when missing: two fleets,
        /// or two environments, can then share one database without sharing entries. nil by
        /// default: the connection's search path (`public`). A plain identifier (lower-case
        /// letters, digits and underscores, not starting with a digit or `pg_`); another name
        /// fails every call with ``ServiceError/Code/cacheStoreFailed``.
        public var schema: String?

        /// Whether the store keeps the fleet coherent through PostgreSQL's `LISTEN`/`NOTIFY`:
        /// each write or removal is announced, and each instance's ``TieredCache`` drops its
        /// own copies (memory, disk) of what another changed; loads waiting on a fleet-wide
        /// lease wake when its holder gives it back, rather than poll. One connection of the
        /// pool listens, from the store's first call. true by default; turn it off for a pool
        /// of one connection, or a server that does not deliver notifications (some
        /// transaction-pooling proxies).
        public var notifications = true

        /// The defaults.
        public init() {}

        /// The bytes between two checks of the bound, as ``evictionCheckInterval`` describes.
        var resolvedEvictionCheckInterval: Int? {
            maximumBytes.map { maximum in max(0, evictionCheckInterval ?? maximum / 20) }
        }
    }
}
#endif
