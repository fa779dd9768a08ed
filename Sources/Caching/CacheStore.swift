public import FoundationEssentials

/// A place to keep responses: the plug-in point for stores other than the built-in disk cache
/// (a database, a shared cache service). ``TieredCache`` puts its memory tier in front of one.
///
/// A store treats anything it cannot read back intact as absent; it throws only for failures
/// worth reporting (the tiered cache reports them as events and carries on without the store).
public protocol CacheStore: Sendable {
    /// The entry stored for `key`, or nil.
    func entry(for key: CacheKey) async throws -> CachedResponse?
    /// Stores `response` for `key`, replacing any entry.
    func store(_ response: CachedResponse, for key: CacheKey) async throws
    /// Removes the entry for `key`, if any.
    func removeEntry(for key: CacheKey) async throws
    /// Removes entries whose `expiresAt` is at or before `now`.
    func removeExpired(now: Date) async throws
    /// Removes every entry.
    func removeAll() async throws
}

/// Where a cached value was found.
public enum CacheTier: String, Sendable, Hashable {
    /// The in-memory LRU.
    case memory
    /// The store behind it (the disk cache, or a plugged-in ``CacheStore``).
    case disk
}

/// Something the cache did, reported on the coordinator's event stream. Keys are reported
/// without query or credentials (``CacheKey/description``).
public enum CacheEvent: Sendable, Hashable {
    /// A stored response answered a load.
    case hit(CacheTier, key: String)
    /// Nothing usable was stored.
    case miss(key: String)
    /// A response was stored in `tier` (`bytes` is its cost).
    case stored(CacheTier, key: String, bytes: Int)
    /// A conditional request revalidated a stored response; `notModified` when the server said 304.
    case revalidated(key: String, notModified: Bool)
    /// A stored response answered because the network failed (offline fallback, `stale-if-error`).
    case servedAfterError(CacheTier, key: String)
    /// Entries left `tier` to stay within its limits.
    case evicted(CacheTier, count: Int, bytes: Int)
    /// An entry was removed: an unsafe method succeeded on its URL, or it could not be decoded.
    case invalidated(key: String)
    /// A store failed; the load went on without it.
    case storeFailed(CacheTier, reason: String)
}
