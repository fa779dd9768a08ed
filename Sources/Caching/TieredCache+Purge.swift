internal import CourierCore
internal import FoundationEssentials

extension TieredCache {
    /// Purges the entries of `url` from every tier: memory, then each store. `url` is the text
    /// of the request's URL, `scheme://authority/path?query` (an endpoint's description); every
    /// method's entry and every user's (entries of requests with credentials) goes.
    ///
    /// Soft, the entries stay but are stale from now on: they answer only as a stale response
    /// may (`stale-while-revalidate`, `stale-if-error`, a request's `max-stale`), and the next
    /// load revalidates them. With a store the fleet shares, every other instance drops its own
    /// copies when it hears of the purge, and reads the shared entry next.
    ///
    /// ```swift
    /// try await cache.purge(url: "https://api.example.com/v1/products/7")
    /// ```
    ///
    /// Returns the entries removed or marked in this cache's tiers. Throws `invalidRequest` when
    /// `url` is not an absolute `http` or `https` URL; throws the first store's failure (say,
    /// `cacheStoreFailed` for an unreachable shared store) after purging every other tier, so a
    /// purge that did not reach the fleet can be tried again. The PostgreSQL store also keeps
    /// such a purge, applies it to its own reads at once, and to the fleet as soon as its server
    /// answers again: trying again is needed only when this process may end first.
    @discardableResult
    public func purge(url: String, soft: Bool = false) async throws(ServiceError) -> Int {
        guard let normalized = PurgeTarget.normalizedURL(url) else {
            throw ServiceError(
                .invalidRequest, "A purge needs an absolute http or https URL, not '\(url.prefix(100))'.")
        }
        return try await purge(.url(normalized), soft: soft)
    }

    /// Purges the entries whose response named `tag` in a `Surrogate-Key` field (tags separated
    /// by spaces) or a `Cache-Tag` field (separated by commas), from every tier; soft, as
    /// ``purge(url:soft:)`` does.
    ///
    /// ```swift
    /// // The origin answered with `Surrogate-Key: product-7 catalog`.
    /// try await cache.purge(tag: "product-7", soft: true)
    /// ```
    ///
    /// A tag is 1 to 1,024 visible ASCII characters other than a comma (a response's other
    /// tags are ignored); anything else throws `invalidRequest`. A store that cannot purge by
    /// tag (one of your own) keeps what the tag names.
    @discardableResult
    public func purge(tag: String, soft: Bool = false) async throws(ServiceError) -> Int {
        guard PurgeTarget.isValidTag(tag) else {
            throw ServiceError(
                .invalidRequest,
                "A purge tag is 1 to 1,024 visible ASCII characters other than a comma, not '\(tag.prefix(100))'.")
        }
        return try await purge(.tag(tag), soft: soft)
    }

    /// Applies `target` to memory, then to each store; reports each tier's count as a `purged`
    /// event and each store's failure as `storeFailed`, then throws the first failure.
    func purge(_ target: PurgeTarget, soft: Bool) async throws(ServiceError) -> Int {
        let now = self.now()
        // A lookup that reads a store while the purge runs (or that began before it and ends
        // after it) copies nothing upwards: what it read may be what the purge removes.
        purgesRunning += 1
        defer {
            purgesRunning -= 1
            for bucket in remoteDrops.indices { remoteDrops[bucket] &+= 1 }
        }
        var total = purgeMemory(target, soft: soft, now: now)
        if total > 0 { observers.notify(.purged(.memory, count: total)) }
        var failure: ServiceError?
        for store in stores {
            do {
                let count = try await Self.purge(target, soft: soft, now: now, in: store)
                total += count
                if count > 0 { observers.notify(.purged(store.tier, count: count)) }
            } catch {
                observers.notify(.storeFailed(store.tier, reason: "\(error)"))
                failure = failure ?? (error as? ServiceError) ?? ServiceError(.unknown, "\(error)", underlying: error)
            }
        }
        if let failure { throw failure }
        return total
    }

    /// Removes (or marks) the memory tier's entries `target` names; returns how many (a soft
    /// purge does not count an entry marked already, or one requested after `now`).
    func purgeMemory(_ target: PurgeTarget, soft: Bool, now: Date) -> Int {
        guard soft else { return memory.removeAll { target.matches($0, $1) }.count }
        return memory.update { key, response in
            guard target.matches(key, response), response.isMarkable(at: now) else { return nil }
            return response.purged(at: now)
        }
    }

    /// Applies `target` to one store: itself when it can purge, else by removing a URL's plain
    /// keys (also when soft: such a store cannot keep the mark, which is not public).
    static func purge(_ target: PurgeTarget, soft: Bool, now: Date, in store: any CacheStore) async throws -> Int {
        if let purging = store as? any CachePurging { return try await purging.purge(target, soft: soft, now: now) }
        var count = 0
        for key in target.plainKeys where try await store.entry(for: key) != nil {
            try await store.removeEntry(for: key)
            count += 1
        }
        return count
    }
}
