internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

/// What a load wants from the cache besides its policy.
enum CacheIntent<T: Sendable>: Sendable {
    /// A plain load: the policy decides.
    case load
    /// `updates()`: hand over the stored value first (through `yield`), then the network's;
    /// with `whenStale`, a stored value the policy deems fresh is the answer, with no request.
    case updates(yield: @Sendable (T) async -> Void, whenStale: Bool)
    /// A background refresh (`stale-while-revalidate`): revalidate and store, serve nothing.
    case refresh
}

extension RequestCoordinator {
    /// A load through the cache:
    ///
    /// 1. Decorate first: the key carries the digest of the credentials decorators add.
    /// 2. Unsafe methods go to the network and, when they succeed, invalidate their URL's entry
    ///    and those of their response's same-origin `Location` and `Content-Location`; a `HEAD`
    ///    is answered from, or freshens, the stored `GET` (`RequestCoordinator+CacheMethods`).
    /// 3. Look up the key in the policy's tiers, unless the caller sent conditions of its own
    ///    (or, under `http`, `Cache-Control: no-store`), and serve, serve stale while
    ///    refreshing, or revalidate, as the policy, RFC 9111 and the request's `Cache-Control`
    ///    say; a `Range` is answered with a part of a stored 200, or of a stored 206 that holds it.
    ///    A `Vary` mismatch revalidates the stored variant by its `ETag` (under `http`).
    /// 4. Send (conditionally when revalidating); a 304 freshens the entry and serves its body.
    /// 5. Store what was decoded successfully (or rejected, as ``Resource/cacheableStatus``
    ///    allows) and may be stored.
    /// 6. When the network fails, serve the entry if the policy allows (`networkElseCache`, or
    ///    `stale-if-error` or `servingStaleWhenUnreachable` under `http`), saying so in
    ///    ``Loaded/networkError``.
    nonisolated func runCached<T: Sendable>(
        _ plan: LoadPlan, cache: TieredCache, intent: CacheIntent<T>,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let request = try await decorate(plan)
        switch request.method {
        case .get: break
        case .head: return try await runCachedHead(plan, request: request, cache: cache, finish: finish)
        default: return try await runUnsafe(plan, request: request, cache: cache, finish: finish)
        }
        let policy = plan.cachePolicy
        let key = CacheKey(request: request, credentialHeaders: configuration.credentialHeaders)
        let label = key.description
        let range = request.headerFields[.range]
        let requestTime = configuration.now()
        // A caller's own conditions are for the server: the cache neither answers nor adds its own.
        // Under `http`, neither does it for a request that says `no-store` (whose response is not
        // stored either): it asks for a response no cache has kept, as browsers read it.
        let bypassed =
            HTTPCacheRules.isConditional(request)
            || (policy.mode == .http && CacheControl(request.headerFields).noStore)
        var hit = bypassed ? nil : await cache.lookup(key, in: policy.tiers)
        if let found = hit,
            found.response.status == .notModified
                || (found.response.status == .partialContent && HTTPCacheRules.storedPart(found.response) == nil)
        {
            // Never the resource itself (a store written by an older version may hold one).
            await cache.removeEntry(for: key)
            events.emit(plan.id, .cache(.invalidated(key: label)))
            hit = nil
        }
        var otherVariant: CachedResponse?
        if let found = hit, !HTTPCacheRules.matchesVariant(found.response, request: request) {
            if policy.mode == .http, found.response.status != .partialContent { otherVariant = found.response }
            hit = nil
        }
        // A stored part answers only a range it holds; else the request goes out (and a part it
        // gets back is combined with the stored one when it is stored).
        if let found = hit, found.response.status == .partialContent,
            range.flatMap({ HTTPCacheRules.partial(found.response, range: $0) }) == nil
        {
            hit = nil
        }
        if hit == nil { events.emit(plan.id, .cache(.miss(key: label))) }

        // Serving from the cache without a request, when the policy says so.
        var revalidating: CachedResponse?
        if let found = hit {
            let unvalidated = HTTPCacheRules.unvalidated(found.response)
            let answer: CachedResponse? = range.map { HTTPCacheRules.partial(unvalidated, range: $0) } ?? unvalidated
            var serve: (stale: Bool, refresh: Bool)?
            var isFinal = policy.mode == .cacheOnly
            switch intent {
            case .refresh:
                // Another refresh (or a load) stored a fresh response since this one was
                // started: nothing to ask the origin (one revalidation per key, however many
                // loads were served the stale one).
                if let plain = storedAnswer(
                    found.response, policy: policy, request: request, now: requestTime, shared: found.tier == .shared),
                    !plain.stale, !plain.refresh
                {
                    serve = plain
                }
            case .updates(_, let whenStale):
                serve = (false, false)
                if whenStale,
                    let plain = storedAnswer(
                        found.response, policy: policy, request: request, now: requestTime,
                        shared: found.tier == .shared),
                    !plain.stale
                {
                    isFinal = true
                }
            case .load:
                serve = storedAnswer(
                    found.response, policy: policy, request: request, now: requestTime,
                    shared: found.tier == .shared)
            }
            if let serve, let answer {
                events.emit(plan.id, .cache(.hit(found.tier, key: label)))
                let execution = Execution.cached(
                    answer, source: ResponseSource(found.tier), now: requestTime, isStale: serve.stale)
                if let value = try await decodeStored(
                    execution, key: key, cache: cache, plan: plan, removesUndecodable: range == nil, finish: finish)
                {
                    if serve.refresh { refreshInBackground(plan, key: key, finish: finish) }
                    if case .updates(let yield, _) = intent, !isFinal {
                        await yield(value)
                    } else {
                        return (value, execution)
                    }
                } else {
                    hit = nil
                }
            }
            if let found = hit, answer != nil, found.response.hasValidators { revalidating = found.response }
        }
        if policy.mode == .cacheOnly {
            throw ServiceError(.cacheMiss, "Nothing usable is cached for \(label).")
        }
        if CacheControl(request.headerFields).contains("only-if-cached") {
            throw ServiceError.onlyIfCachedMiss(
                "The request says only-if-cached, and nothing stored for \(label) satisfies it.")
        }
        let lookup = CacheLookup(
            key: key, hit: hit, revalidating: revalidating, otherVariant: otherVariant, requestTime: requestTime,
            range: range, yieldedStored: intent.isUpdates && hit != nil)
        return try await fetchAcrossFleet(
            plan, request: request, lookup: lookup, cache: cache, plainLoad: intent.isLoad, finish: finish)
    }

    /// Whether a plain load under `policy` is answered by `entry` without a request, and how;
    /// `shared` when the entry comes from a tier a fleet shares, read by a shared cache's rules.
    nonisolated func storedAnswer(
        _ entry: CachedResponse, policy: CachePolicy, request: HTTPRequest, now: Date, shared: Bool = false
    ) -> (stale: Bool, refresh: Bool)? {
        switch policy.mode {
        case .cacheOnly:
            return (false, false)
        case .cacheElseNetwork(let maxAge):
            let age = now.timeIntervalSince(entry.responseTime)
            return entry.effectivePurge == nil && age >= 0 && age < maxAge / .seconds(1) ? (false, false) : nil
        case .http:
            switch HTTPCacheRules.decide(entry, for: request, now: now, shared: shared) {
            case .fresh: return (!HTTPCacheRules.freshness(of: entry, now: now, shared: shared).isFresh, false)
            case .staleWhileRevalidate: return (true, true)
            case .revalidate, .unusable: return nil
            }
        case .networkOnly, .networkElseCache:
            return nil
        }
    }
}

/// What the cache held for a `GET` before it went to the network.
struct CacheLookup: Sendable {
    var key: CacheKey
    /// The stored response matching the request (nil on a miss).
    var hit: TieredCache.Hit?
    /// The stored response being revalidated with its validators.
    var revalidating: CachedResponse?
    /// A stored response for another `Vary` variant, revalidated by its `ETag`.
    var otherVariant: CachedResponse?
    var requestTime: Date
    /// The request's `Range`, when it has one.
    var range: String?
    /// Whether `updates()` already handed the stored value over.
    var yieldedStored: Bool
}

extension CacheIntent {
    var isUpdates: Bool {
        if case .updates = self { return true }
        return false
    }
}
