internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

extension RequestCoordinator {
    /// The network part of a cached `GET`: a conditional request when revalidating (the
    /// matching entry's validators, or the `ETag` of another `Vary` variant), a 304 merged into
    /// the entry, a new response stored, and the stored response served when the network fails
    /// and the policy allows it.
    nonisolated func fetch<T: Sendable>(
        _ plan: LoadPlan, request: HTTPRequest, lookup: CacheLookup, cache: TieredCache,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let policy = plan.cachePolicy
        let label = lookup.key.description
        do {
            var conditional = HTTPFields()
            var validated: CachedResponse?
            if let stored = lookup.revalidating {
                conditional = HTTPCacheRules.conditionalFields(for: stored)
                validated = stored
            } else if let other = lookup.otherVariant, let fields = HTTPCacheRules.variantConditionalFields(for: other)
            {
                conditional = fields
                validated = other
            }
            let network = try await execute(plan, decorated: request, extraFields: conditional)
            let responseTime = configuration.now()
            let head = network.response.head
            if head.status.code == 304, let stored = validated {
                var merged = HTTPCacheRules.freshened(
                    stored, with: head, requestTime: lookup.requestTime, responseTime: responseTime)
                if lookup.revalidating == nil {
                    // The server chose the stored variant for this request (RFC 9111, section 4.3.4).
                    merged.variant = HTTPCacheRules.variant(of: request, responseFields: merged.headerFields)
                }
                events.emit(plan.id, .cache(.revalidated(key: label, notModified: true)))
                await store(
                    merged, key: lookup.key, tiers: policy.tiers, cache: cache, plan: plan, request: network.request)
                // A part the 304 changed (another ETag) no longer says what it holds: the range
                // comes from the part as it was.
                let answer =
                    lookup.range.flatMap {
                        HTTPCacheRules.partial(merged, range: $0) ?? HTTPCacheRules.partial(stored, range: $0)
                    } ?? merged
                var execution = Execution.cached(
                    answer, source: .revalidated, now: responseTime, metrics: network.response.metrics)
                execution.wasCoalesced = network.wasCoalesced
                execution.request = network.request
                return (try await finish(execution), execution)
            }
            if validated != nil { events.emit(plan.id, .cache(.revalidated(key: label, notModified: false))) }
            let value = try await finishAndStore(
                network, plan: plan, lookup: lookup, cache: cache, responseTime: responseTime, finish: finish)
            return (value, network)
        } catch let error as ServiceError {
            // `updates()` handed the stored value over already: it gets the failure.
            guard !lookup.yieldedStored,
                let fallback = standIn(for: error, lookup: lookup, policy: policy, request: request)
            else {
                throw error
            }
            return try await serveAfterError(
                fallback, error: error, key: lookup.key, range: lookup.range, plan: plan, finish: finish)
        }
    }

    /// The stored response that may answer in place of the network's failure `error`, if any:
    /// under `networkElseCache` any, under `http` one `stale-if-error` allows (RFC 5861:
    /// failures to connect, and 500, 502, 503 and 504), or, when the origin could not be
    /// reached, one ``CachePolicy/servingStaleWhenUnreachable(upTo:)`` allows for `request`.
    private nonisolated func standIn(
        for error: ServiceError, lookup: CacheLookup, policy: CachePolicy, request: HTTPRequest? = nil
    ) -> TieredCache.Hit? {
        guard let fallback = lookup.hit, Self.isNetworkFailure(error) else { return nil }
        switch policy.mode {
        case .networkElseCache:
            return fallback
        case .http:
            let serverError = error.status.map { HTTPCacheRules.isServerError($0.code) } ?? true
            let allowance = policy.staleAllowanceWhenUnreachable.flatMap { allowance in
                request.flatMap { Self.isUnreachable(error) ? HTTPCacheRules.staleAllowance(allowance, for: $0) : nil }
            }
            guard serverError,
                HTTPCacheRules.mayServeOnError(
                    fallback.response, now: configuration.now(), shared: fallback.tier == .shared,
                    allowance: allowance)
            else { return nil }
            return fallback
        default:
            return nil
        }
    }

    /// The entry to store for a response the resource rejected (`error`), if any: as its
    /// ``Resource/cacheableStatus`` says, when HTTP lets the response be stored; a server error
    /// (5xx) only under `http`, only while it is fresh as it arrives (explicit freshness, or a
    /// 501's heuristic one: a stale one would be of no use), and only when no stored response
    /// may answer in its place (`stale-if-error`), which it would replace.
    private nonisolated func rejectedEntry(
        _ network: Execution, error: ServiceError, plan: LoadPlan, lookup: CacheLookup, responseTime: Date
    ) -> CachedResponse? {
        let head = network.response.head
        guard error.code == .unacceptableStatus, plan.cacheableStatus.storesRejected(head.status),
            let request = network.request, HTTPCacheRules.isStorable(request: request, response: head),
            let entry = storable(
                network, policy: plan.cachePolicy, requestTime: lookup.requestTime, responseTime: responseTime)
        else { return nil }
        guard head.status.code >= 500 else { return entry }
        guard plan.cachePolicy.mode == .http, HTTPCacheRules.freshness(of: entry, now: responseTime).isFresh,
            standIn(for: error, lookup: lookup, policy: plan.cachePolicy) == nil
        else { return nil }
        return entry
    }

    /// Finishes a network response and stores it when it may be stored: after it decoded, or,
    /// when the resource rejected its status, as ``Resource/cacheableStatus`` and HTTP allow
    /// (the rejection is then thrown as usual).
    private nonisolated func finishAndStore<T: Sendable>(
        _ network: Execution, plan: LoadPlan, lookup: CacheLookup, cache: TieredCache, responseTime: Date,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> T {
        let policy = plan.cachePolicy
        let requestTime = lookup.requestTime
        do {
            let value = try await finish(network)
            if let entry = storable(network, policy: policy, requestTime: requestTime, responseTime: responseTime) {
                await store(
                    entry, key: lookup.key, tiers: policy.tiers, cache: cache, plan: plan, request: network.request)
            }
            return value
        } catch let error as ServiceError {
            if let entry = rejectedEntry(network, error: error, plan: plan, lookup: lookup, responseTime: responseTime)
            {
                await store(
                    entry, key: lookup.key, tiers: policy.tiers, cache: cache, plan: plan, request: network.request)
            }
            throw error
        }
    }
}
