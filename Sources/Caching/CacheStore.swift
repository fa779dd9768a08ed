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
