internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

extension RequestCoordinator {
    /// A `HEAD` through the cache (RFC 9111, section 4.3.5): answered from the stored `GET`
    /// response (its head, no body) when the policy would serve that `GET` without a request;
    /// otherwise sent, and a 200 updates the stored `GET` with its fields, or removes it when
    /// its validators or length say the stored body is no longer current.
    nonisolated func runCachedHead<T: Sendable>(
        _ plan: LoadPlan, request: HTTPRequest, cache: TieredCache,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let policy = plan.cachePolicy
        guard policy.usesCache else {
            let execution = try await execute(plan, decorated: request)
            return (try await finish(execution), execution)
        }
        var get = request
        get.method = .get
        let key = CacheKey(request: get, credentialHeaders: configuration.credentialHeaders)
        let requestTime = configuration.now()
        var stored = HTTPCacheRules.isConditional(request) ? nil : await cache.lookup(key, in: policy.tiers)
        if let found = stored,
            found.response.status == .partialContent || !HTTPCacheRules.matchesVariant(found.response, request: get)
        {
            stored = nil
        }
        if let found = stored,
            let serve = storedAnswer(
                found.response, policy: policy, request: get, now: requestTime, shared: found.tier == .shared),
            !serve.refresh
        {
            events.emit(plan.id, .cache(.hit(found.tier, key: key.description)))
            let execution = Execution.cached(
                HTTPCacheRules.headResponse(from: HTTPCacheRules.unvalidated(found.response)),
                source: ResponseSource(found.tier), now: requestTime,
                isStale: serve.stale)
            return (try await finish(execution), execution)
        }
        if CacheControl(request.headerFields).contains("only-if-cached") {
            throw ServiceError.onlyIfCachedMiss(
                "The request says only-if-cached, and nothing usable is cached for \(key.description).")
        }
        if policy.mode == .cacheOnly {
            throw ServiceError(.cacheMiss, "Nothing usable is cached for \(key.description).")
        }
        let execution = try await execute(plan, decorated: request)
        let head = execution.response.head
        if let found = stored, head.status.code == 200 {
            if var updated = HTTPCacheRules.freshened(
                found.response, withHead: head, requestTime: requestTime, responseTime: configuration.now())
            {
                if policy.mode == .http { updated.expiresAt = HTTPCacheRules.retainedUntil(updated) }
                events.emit(plan.id, .cache(.revalidated(key: key.description, notModified: true)))
                await store(updated, key: key, tiers: policy.tiers, cache: cache, plan: plan, request: get)
            } else {
                await cache.removeEntry(for: key)
                events.emit(plan.id, .cache(.invalidated(key: key.description)))
            }
        }
        return (try await finish(execution), execution)
    }

    /// An unsafe method: sent, and when it succeeds the stored responses of its URL and of its
    /// response's same-origin `Location` and `Content-Location` are removed (section 4.4).
    nonisolated func runUnsafe<T: Sendable>(
        _ plan: LoadPlan, request: HTTPRequest, cache: TieredCache,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let execution = try await execute(plan, decorated: request)
        let head = execution.response.head
        if HTTPCacheRules.invalidates(method: request.method, status: head.status.code) {
            for target in HTTPCacheRules.invalidatedRequests(after: request, response: head) {
                let key = CacheKey(request: target, credentialHeaders: configuration.credentialHeaders)
                await cache.removeEntry(for: key)
                events.emit(plan.id, .cache(.invalidated(key: key.description)))
            }
        }
        return (try await finish(execution), execution)
    }
}
