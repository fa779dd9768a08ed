public import FoundationEssentials

/// Memory in front of a store (usually a ``DiskCache``): reads try memory first, then the store,
/// and a store hit is promoted to memory; writes go to the tiers a policy names.
///
/// The memory tier is plain state inside this actor, so a memory hit costs one actor hop. A
/// failing store never fails a load: its error becomes a ``CacheEvent/storeFailed(_:reason:)``
/// event and the cache carries on as if it had missed.
public actor TieredCache {
    /// A stored response and where it was found.
    public struct Hit: Sendable {
        /// The stored response.
        public var response: CachedResponse
        /// The tier it came from.
        public var tier: CacheTier
    }

    private var memory: MemoryCache<CacheKey, CachedResponse>
    /// The store behind memory, if any.
    public nonisolated let store: (any CacheStore)?
    /// Receive evictions and store failures (the coordinator forwards them to its events).
    public nonisolated let observers = CacheObservers()
    private nonisolated let now: @Sendable () -> Date

    /// Creates a cache with a memory tier bounded by `memory` and, optionally, a second tier.
    /// `now` is the wall clock used for expiry (tests inject one).
    public init(
        memory limits: MemoryCache<CacheKey, CachedResponse>.Limits = .init(), store: (any CacheStore)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        memory = MemoryCache(limits: limits)
        self.store = store
        self.now = now
        if let disk = store as? DiskCache {
            let observers = self.observers
            disk.observers.add { observers.notify($0) }
        }
    }

    /// Entries and total cost of the memory tier.
    public var memoryUsage: (count: Int, cost: Int) { (memory.count, memory.totalCost) }

    /// The response stored for `key` in `tiers`, memory first. Expired entries are misses.
    public func lookup(_ key: CacheKey, in tiers: CachePolicy.Tiers = .all) async -> Hit? {
        if tiers.contains(.memory), let response = memory.value(for: key, now: self.now()) {
            return Hit(response: response, tier: .memory)
        }
        guard tiers.contains(.disk), let store else { return nil }
        let found: CachedResponse?
        do {
            found = try await store.entry(for: key)
        } catch {
            observers.notify(.storeFailed(.disk, reason: "\(error)"))
            return nil
        }
        guard let response = found else { return nil }
        if let expiry = response.expiresAt, expiry <= now() {
            try? await store.removeEntry(for: key)
            return nil
        }
        if tiers.contains(.memory), !memory.contains(key) { putInMemory(response, for: key) }
        return Hit(response: response, tier: .disk)
    }

    /// Stores `response` for `key` in `tiers`; returns the tiers that kept it.
    @discardableResult
    public func store(_ response: CachedResponse, for key: CacheKey, in tiers: CachePolicy.Tiers) async
        -> CachePolicy.Tiers
    {
        var kept: CachePolicy.Tiers = []
        if tiers.contains(.memory) {
            if putInMemory(response, for: key) { kept.insert(.memory) }
        } else {
            memory.removeValue(for: key)  // never leave an older copy in front of the new one
        }
        if tiers.contains(.disk), let store {
            do {
                try await store.store(response, for: key)
                kept.insert(.disk)
            } catch {
                observers.notify(.storeFailed(.disk, reason: "\(error)"))
            }
        }
        return kept
    }

    /// Removes `key` from every tier.
    public func removeEntry(for key: CacheKey) async {
        memory.removeValue(for: key)
        do { try await store?.removeEntry(for: key) } catch { observers.notify(.storeFailed(.disk, reason: "\(error)")) }
    }

    /// Removes entries expired at `now` (default: the cache's clock) from every tier.
    public func removeExpired(now: Date? = nil) async {
        let now = now ?? self.now()
        memory.removeExpired(now: now)
        do { try await store?.removeExpired(now: now) } catch { observers.notify(.storeFailed(.disk, reason: "\(error)")) }
    }

    /// Empties every tier.
    public func removeAll() async {
        memory.removeAll()
        do { try await store?.removeAll() } catch { observers.notify(.storeFailed(.disk, reason: "\(error)")) }
    }

    @discardableResult
    private func putInMemory(_ response: CachedResponse, for key: CacheKey) -> Bool {
        let outcome = memory.setValue(response, for: key, cost: response.cost, expiresAt: response.expiresAt)
        if outcome.count > 0 { observers.notify(.evicted(.memory, count: outcome.count, bytes: outcome.cost)) }
        return outcome.kept
    }
}

extension TieredCache: CacheStore {
    public func entry(for key: CacheKey) async throws -> CachedResponse? { await lookup(key)?.response }
    public func store(_ response: CachedResponse, for key: CacheKey) async throws { await store(response, for: key, in: .all) }
    public func removeExpired(now: Date) async throws { await removeExpired(now: Optional(now)) }
}
