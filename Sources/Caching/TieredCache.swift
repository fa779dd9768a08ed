public import FoundationEssentials

/// Memory in front of a chain of stores, in order (usually memory, then a ``DiskCache``, then a
/// store the fleet shares): reads try memory first, then each store; a hit in a lower tier is
/// promoted to every upper tier the policy names; writes go to every tier a policy names.
///
/// Each store says which tier it is (``CacheStore/tier``). The memory tier is plain state
/// inside this actor, so a memory hit costs one actor hop. A failing store never fails a load:
/// its error becomes a `storeFailed(_:reason:)` event naming its tier, and the
/// chain carries on as if that store had missed.
public actor TieredCache {
    /// A stored response and where it was found.
    public struct Hit: Sendable {
        /// The stored response.
        public var response: CachedResponse
        /// The tier it came from.
        public var tier: CacheTier
    }

    var memory: MemoryCache<CacheKey, CachedResponse>
    /// Counts the drops of copies another instance's change caused, in 256 buckets by the
    /// key's digest: a lookup that read a store while a drop of its bucket ran does not
    /// promote what it read (it may be the old version).
    var remoteDrops = [UInt64](repeating: 0, count: 256)
    /// Drops of one remote entry under way, in the buckets of ``remoteDrops``: while one runs,
    /// lookups in its bucket copy nothing upwards (what they read may be about to go).
    var dropsRunning = [Int](repeating: 0, count: 256)
    /// Purges, and drops of remote purges or of every entry, under way: while any runs,
    /// lookups copy nothing upwards.
    var purgesRunning = 0
    /// The stores behind memory, upper first.
    package nonisolated let stores: [any CacheStore]
    /// Receive evictions and store failures (the coordinator forwards them to its events).
    package nonisolated let observers = CacheObservers()
    nonisolated let now: @Sendable () -> Date
    /// The handlers this cache added to its stores' observers, removed when it goes (a store
    /// may outlive many caches).
    private nonisolated let subscriptions: [(source: any CacheEventSource, id: UInt64)]
    /// The handlers this cache added to its shared stores' remote changes, removed when it goes.
    private nonisolated let coherence: [(source: any CacheCoherenceSource, id: UInt64)]

    /// Creates a cache with a memory tier bounded by `memory` in front of `stores`, in order
    /// (say, a ``DiskCache`` then a shared store). `now` is the wall clock used for expiry
    /// (tests inject one).
    public init(
        memory limits: MemoryCache<CacheKey, CachedResponse>.Limits = .init(), stores: [any CacheStore],
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        memory = MemoryCache(limits: limits)
        self.stores = stores
        self.now = now
        let observers = self.observers
        subscriptions = stores.compactMap { store in
            guard let source = store as? any CacheEventSource else { return nil }
            return (source, source.observers.add { observers.notify($0) })
        }
        let sink = CoherenceSink()
        coherence = stores.enumerated().compactMap { index, store in
            guard let source = store as? any CacheCoherenceSource else { return nil }
            return (source, source.remoteChanges.add { sink.changed($0, below: index) })
        }
        // Only with a store to hear: a weak reference's side table stays allocated for as long
        // as the cache lives, which LeakSanitizer reports for caches alive at exit.
        if !coherence.isEmpty { sink.attach(self) }
    }

    deinit {
        for (source, id) in subscriptions { source.observers.remove(id) }
        for (source, id) in coherence { source.remoteChanges.remove(id) }
    }

    /// Creates a cache with a memory tier bounded by `memory` and, optionally, one store behind it.
    public init(
        memory limits: MemoryCache<CacheKey, CachedResponse>.Limits = .init(), store: (any CacheStore)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(memory: limits, stores: store.map { [$0] } ?? [], now: now)
    }

    /// The first store behind memory, if any.
    public nonisolated var store: (any CacheStore)? { stores.first }

    /// Entries and total cost of the memory tier.
    public var memoryUsage: (count: Int, cost: Int) { (memory.count, memory.totalCost) }

    /// The response stored for `key` in `tiers`, memory first, then each store in order. Expired
    /// entries are misses. A hit below memory is copied to every upper tier in `tiers`.
    public func lookup(_ key: CacheKey, in tiers: CachePolicy.Tiers = .all) async -> Hit? {
        if tiers.contains(.memory), let response = memory.value(for: key, now: self.now()) {
            return Hit(response: response, tier: .memory)
        }
        let bucket = Self.dropBucket(key.digest)
        let drops = remoteDrops[bucket]
        for (index, store) in stores.enumerated() where tiers.contains(store.tier.policyTiers) {
            guard let response = await entry(for: key, in: store) else { continue }
            if remoteDrops[bucket] == drops, dropsRunning[bucket] == 0, purgesRunning == 0 {
                await promote(response, for: key, above: index, in: tiers)
            }
            return Hit(response: response, tier: store.tier)
        }
        return nil
    }

    /// Stores `response` for `key` in `tiers`; returns the tiers that kept it (a tier with
    /// several stores counts when any of them kept it).
    @discardableResult
    public func store(_ response: CachedResponse, for key: CacheKey, in tiers: CachePolicy.Tiers) async
        -> CachePolicy.Tiers
    {
        var response = response
        // A response requested before a soft purge of the copy it replaces keeps the mark.
        if response.purgedAt == nil, let mark = memory.peek(key)?.effectivePurge, mark > response.requestTime {
            response.purgedAt = mark
        }
        var kept: CachePolicy.Tiers = []
        if tiers.contains(.memory) {
            if putInMemory(response, for: key) { kept.insert(.memory) }
        } else {
            memory.removeValue(for: key)  // never leave an older copy in front of the new one
        }
        for store in stores where tiers.contains(store.tier.policyTiers) {
            if await put(response, for: key, in: store) { kept.insert(store.tier.policyTiers) }
        }
        return kept
    }

    /// Removes `key` from every tier.
    public func removeEntry(for key: CacheKey) async {
        memory.removeValue(for: key)
        for store in stores { await reporting(store) { try await $0.removeEntry(for: key) } }
    }

    /// Removes entries expired at `now` (default: the cache's clock) from every tier.
    public func removeExpired(now: Date? = nil) async {
        let now = now ?? self.now()
        memory.removeExpired(now: now)
        for store in stores { await reporting(store) { try await $0.removeExpired(now: now) } }
    }

    /// Empties every tier.
    public func removeAll() async {
        memory.removeAll()
        for store in stores { await reporting(store) { try await $0.removeAll() } }
    }
}

extension TieredCache: CacheStore {
    public func entry(for key: CacheKey) async throws -> CachedResponse? { await lookup(key)?.response }
    public func store(_ response: CachedResponse, for key: CacheKey) async throws {
        await store(response, for: key, in: .all)
    }
    public func removeExpired(now: Date) async throws { await removeExpired(now: Optional(now)) }
}
