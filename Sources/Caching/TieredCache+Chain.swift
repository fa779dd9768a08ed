internal import FoundationEssentials

extension TieredCache {
    /// The first store in the chain that hands out leases, when its tier is in `tiers`: the one
    /// fleet-wide collapsing leases keys from.
    package nonisolated func leasingStore(in tiers: CachePolicy.Tiers) -> (any CacheLeasing)? {
        for store in stores where tiers.contains(store.tier.policyTiers) {
            if let leasing = store as? any CacheLeasing { return leasing }
        }
        return nil
    }

    /// `store`'s unexpired entry for `key`; an expired one is removed, a failure reported.
    func entry(for key: CacheKey, in store: any CacheStore) async -> CachedResponse? {
        let found: CachedResponse?
        do {
            found = try await store.entry(for: key)
        } catch {
            observers.notify(.storeFailed(store.tier, reason: "\(error)"))
            return nil
        }
        guard let response = found else { return nil }
        if let expiry = response.expiresAt, expiry <= now() {
            await reporting(store) { try await $0.removeEntry(for: key) }
            return nil
        }
        return response
    }

    /// Copies a response found in store `index` to memory and to the stores above it, each when
    /// `tiers` names its tier.
    func promote(_ response: CachedResponse, for key: CacheKey, above index: Int, in tiers: CachePolicy.Tiers) async {
        if tiers.contains(.memory), !memory.contains(key) { putInMemory(response, for: key) }
        for store in stores[..<index] where tiers.contains(store.tier.policyTiers) {
            await put(response, for: key, in: store)
        }
    }

    /// Stores `response` in `store`; false (and a `storeFailed` event) when it failed.
    @discardableResult
    func put(_ response: CachedResponse, for key: CacheKey, in store: any CacheStore) async -> Bool {
        do {
            try await store.store(response, for: key)
            return true
        } catch {
            observers.notify(.storeFailed(store.tier, reason: "\(error)"))
            return false
        }
    }

    /// Runs `work` on `store`, reporting a failure as a `storeFailed` event naming its tier.
    func reporting(_ store: any CacheStore, _ work: (any CacheStore) async throws -> Void) async {
        do { try await work(store) } catch { observers.notify(.storeFailed(store.tier, reason: "\(error)")) }
    }

    @discardableResult
    func putInMemory(_ response: CachedResponse, for key: CacheKey) -> Bool {
        let outcome = memory.setValue(response, for: key, cost: response.cost, expiresAt: response.expiresAt)
        if outcome.count > 0 { observers.notify(.evicted(.memory, count: outcome.count, bytes: outcome.cost)) }
        return outcome.kept
    }
}
