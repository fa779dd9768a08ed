internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

/// What a load wants from the cache besides its policy.
enum CacheIntent<T: Sendable>: Sendable {
    /// A plain load: the policy decides.
    case load
    /// `updates()`: hand over the stored value first (through `yield`), then the network's.
    case updates(yield: @Sendable (T) async -> Void)
    /// A background refresh (`stale-while-revalidate`): revalidate and store, serve nothing.
    case refresh
}

extension RequestCoordinator {
    /// A load through the cache:
    ///
    /// 1. Decorate first: the key carries the digest of the credentials decorators add.
    /// 2. Unsafe methods go to the network and, when they succeed, invalidate the URL's entry.
    /// 3. Look up the key in the policy's tiers (a `Vary` mismatch is a miss), and serve, serve
    ///    stale while refreshing, or revalidate, as the policy and RFC 9111 say.
    /// 4. Send (conditionally when revalidating); a 304 freshens the entry and serves its body.
    /// 5. Store what was decoded successfully and may be stored.
    /// 6. When the network fails, serve the entry if the policy allows (`networkElseCache`, or
    ///    `stale-if-error` under `http`), saying so in ``Loaded/networkError``.
    nonisolated func runCached<T: Sendable>(
        _ plan: LoadPlan, cache: TieredCache, intent: CacheIntent<T>,
        finish: @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let policy = plan.cachePolicy
        let request = try await decorate(plan)
        let key = CacheKey(request: request, credentialHeaders: configuration.credentialHeaders)
        let label = key.description

        guard request.method == .get else {
            let execution = try await execute(plan, decorated: request)
            if HTTPCacheRules.invalidates(method: request.method, status: execution.response.head.status.code) {
                await cache.removeEntry(for: key.replacingMethod(with: .get))
                events.emit(plan.id, .cache(.invalidated(key: label)))
            }
            return (try await finish(execution), execution)
        }

        let requestTime = configuration.now()
        var hit = await cache.lookup(key, in: policy.tiers)
        if let found = hit, !HTTPCacheRules.matchesVariant(found.response, request: request) { hit = nil }
        if hit == nil { events.emit(plan.id, .cache(.miss(key: label))) }

        // Serving from the cache without a request, when the policy says so.
        var revalidating: CachedResponse?
        if let found = hit {
            var serve: (stale: Bool, refresh: Bool)?
            switch (intent, policy.mode) {
            case (.refresh, _):
                break
            case (_, .cacheOnly):
                serve = (false, false)
            case (.updates, _):
                serve = (false, false)
            case (.load, .cacheElseNetwork(let maxAge)):
                let age = requestTime.timeIntervalSince(found.response.responseTime)
                if age >= 0 && age < maxAge / .seconds(1) {
                    serve = (false, false)
                }
            case (.load, .http):
                switch HTTPCacheRules.decide(found.response, for: request, now: requestTime) {
                case .fresh: serve = (false, false)
                case .staleWhileRevalidate: serve = (true, true)
                case .revalidate, .unusable: break
                }
            case (.load, _):
                break
            }
            if let serve {
                events.emit(plan.id, .cache(.hit(found.tier, key: label)))
                let execution = Execution.cached(found.response, source: ResponseSource(found.tier), isStale: serve.stale)
                if let value = try await decodeStored(execution, key: key, cache: cache, plan: plan, finish: finish) {
                    if serve.refresh { refreshInBackground(plan, finish: finish) }
                    if case .updates(let yield) = intent, policy.mode != .cacheOnly {
                        await yield(value)
                    } else {
                        return (value, execution)
                    }
                } else {
                    hit = nil
                }
            }
            if let found = hit, found.response.hasValidators { revalidating = found.response }
        }
        if policy.mode == .cacheOnly {
            throw ServiceError(.cacheMiss, "Nothing usable is cached for \(label).")
        }

        // The network.
        let yieldedStored = intent.isUpdates && hit != nil
        do {
            let conditional = revalidating.map(HTTPCacheRules.conditionalFields(for:)) ?? [:]
            let network = try await execute(plan, decorated: request, extraFields: conditional)
            let responseTime = configuration.now()
            let head = network.response.head
            if head.status.code == 304, let stored = revalidating {
                let merged = HTTPCacheRules.freshened(
                    stored, with: head, requestTime: requestTime, responseTime: responseTime)
                events.emit(plan.id, .cache(.revalidated(key: label, notModified: true)))
                await store(merged, key: key, tiers: policy.tiers, cache: cache, plan: plan)
                var execution = Execution.cached(merged, source: .revalidated, metrics: network.response.metrics)
                execution.wasCoalesced = network.wasCoalesced
                execution.request = network.request
                return (try await finish(execution), execution)
            }
            if revalidating != nil { events.emit(plan.id, .cache(.revalidated(key: label, notModified: false))) }
            let value = try await finish(network)
            if let entry = storable(network, policy: policy, requestTime: requestTime, responseTime: responseTime) {
                await store(entry, key: key, tiers: policy.tiers, cache: cache, plan: plan)
            }
            return (value, network)
        } catch let error as ServiceError {
            guard let fallback = hit, !yieldedStored, Self.isNetworkFailure(error) else { throw error }
            switch policy.mode {
            case .networkElseCache:
                break
            case .http:
                // stale-if-error (RFC 5861): failures to connect, and 500, 502, 503 and 504.
                let serverError = error.status.map { HTTPCacheRules.isServerError($0.code) } ?? true
                guard serverError, HTTPCacheRules.mayServeOnError(fallback.response, now: configuration.now())
                else { throw error }
            default:
                throw error
            }
            return try await serveAfterError(fallback, error: error, key: key, plan: plan, finish: finish)
        }
    }

    /// Decodes a stored response; one that no longer decodes (the model changed, say) is removed
    /// and the load goes on to the network.
    private nonisolated func decodeStored<T: Sendable>(
        _ execution: Execution, key: CacheKey, cache: TieredCache, plan: LoadPlan,
        finish: @Sendable (Execution) async throws -> T
    ) async throws -> T? {
        do {
            return try await finish(execution)
        } catch let error as ServiceError where error.code == .decodingFailed || error.code == .validationFailed {
            await cache.removeEntry(for: key)
            events.emit(plan.id, .cache(.invalidated(key: key.description)))
            plan.logger?.info("cached response no longer decodes; removed", metadata: ["sdk.error.code": "\(error.code)"])
            return nil
        }
    }

    private nonisolated func serveAfterError<T: Sendable>(
        _ fallback: TieredCache.Hit, error: ServiceError, key: CacheKey, plan: LoadPlan,
        finish: @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        events.emit(plan.id, .cache(.servedAfterError(fallback.tier, key: key.description)))
        plan.logger?.debug("network failed; serving the cached response", metadata: ["sdk.error.code": "\(error.code)"])
        let stale = !HTTPCacheRules.freshness(of: fallback.response, now: configuration.now()).isFresh
        let execution = Execution.cached(
            fallback.response, source: ResponseSource(fallback.tier), isStale: stale, networkError: error)
        return (try await finish(execution), execution)
    }

    /// The entry to store for a network response the resource accepted, or nil when it may not
    /// be stored under `policy`.
    private nonisolated func storable(
        _ execution: Execution, policy: CachePolicy, requestTime: Date, responseTime: Date
    ) -> CachedResponse? {
        guard let request = execution.request else { return nil }
        let head = execution.response.head
        let allowed =
            policy.mode == .http
            ? HTTPCacheRules.isStorable(request: request, response: head)
            : HTTPCacheRules.mayStore(request: request, response: head)
        guard allowed else { return nil }
        var entry = CachedResponse(
            status: head.status.code, headerFields: HTTPCacheRules.storedFields(of: head),
            body: execution.response.body, requestTime: requestTime, responseTime: responseTime,
            variant: HTTPCacheRules.variant(of: request, responseFields: head.headerFields))
        if policy.mode == .http && !entry.hasValidators {
            // Without validators an entry is useless once past its stale windows: let stores drop it.
            let control = CacheControl(head.headerFields)
            let freshness = HTTPCacheRules.freshness(of: entry, now: responseTime)
            let window = max(control.staleWhileRevalidate ?? 0, control.staleIfError ?? 0)
            entry.expiresAt = responseTime + max(0, -freshness.staleness) + TimeInterval(window)
        }
        return entry
    }

    private nonisolated func store(
        _ entry: CachedResponse, key: CacheKey, tiers: CachePolicy.Tiers, cache: TieredCache, plan: LoadPlan
    ) async {
        let kept = await cache.store(entry, for: key, in: tiers)
        for tier in [CacheTier.memory, .disk] where kept.contains(tier == .memory ? .memory : .disk) {
            events.emit(plan.id, .cache(.stored(tier, key: key.description, bytes: entry.cost)))
        }
    }

    /// Revalidates in the background (`stale-while-revalidate`), as its own load with a new id.
    private nonisolated func refreshInBackground<T: Sendable>(
        _ plan: LoadPlan, finish: @escaping @Sendable (Execution) async throws -> T
    ) {
        var refresh = plan
        refresh.id = events.makeRequestID()
        plan.logger?.debug("serving stale; refreshing in the background", metadata: ["sdk.refresh.id": "\(refresh.id)"])
        Self.startBackground(on: self) { [refresh] coordinator in
            _ = try? await coordinator.run(refresh, intent: CacheIntent<T>.refresh, finish: finish)
        }
    }

    /// Failures that mean the network (or the server) could not answer, as opposed to an answer
    /// the resource rejected.
    static func isNetworkFailure(_ error: ServiceError) -> Bool {
        switch error.code {
        case .cancelled, .shutDown, .redundantRequest, .invalidRequest, .encodingFailed, .decodingFailed,
            .validationFailed, .cacheMiss:
            return false
        case .unacceptableStatus:
            return (error.status?.code ?? 0) >= 500
        default:
            return true
        }
    }
}

extension CacheIntent {
    var isUpdates: Bool {
        if case .updates = self { return true }
        return false
    }
}
