public import FoundationEssentials

/// A place to keep responses: the plug-in point for stores other than the built-in disk cache
/// (a database, a shared cache service). ``TieredCache`` puts its memory tier in front of a
/// chain of them, in order (memory, then disk, then a shared store).
///
/// A store treats anything it cannot read back intact as absent; it throws only for failures
/// worth reporting (the tiered cache reports them as events and carries on without the store).
public protocol CacheStore: Sendable {
    /// Which tier the store is: the tiers a policy names decide whether it is read and written,
    /// and events, metrics and `storeFailed(_:reason:)` name it. `.disk` unless
    /// the store says otherwise (a store the fleet shares says `.shared`).
    var tier: CacheTier { get }
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

extension CacheStore {
    /// `.disk`: a store is local unless it says otherwise.
    public var tier: CacheTier { .disk }
}
