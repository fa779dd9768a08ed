internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

extension RequestCoordinator {
    /// Decodes a stored response; one that no longer decodes (the model changed, say) is removed
    /// when `removesUndecodable` (a whole stored response, not a part of it) and the load goes on
    /// to the network.
    nonisolated func decodeStored<T: Sendable>(
        _ execution: Execution, key: CacheKey, cache: TieredCache, plan: LoadPlan, removesUndecodable: Bool = true,
        finish: @Sendable (Execution) async throws -> T
    ) async throws -> T? {
        do {
            return try await finish(execution)
        } catch let error as ServiceError
            where removesUndecodable && (error.code == .decodingFailed || error.code == .validationFailed)
        {
            await cache.removeEntry(for: key)
            events.emit(plan.id, .cache(.invalidated(key: key.description)))
            plan.logger?.debug(
                "cached response no longer decodes; removed", metadata: ["courier.error.code": "\(error.code)"])
            return nil
        }
    }

    /// Serves the stored response after the network failed (the part a `Range` asks for, when
    /// it holds it), saying so in ``Loaded/networkError``.
    nonisolated func serveAfterError<T: Sendable>(
        _ fallback: TieredCache.Hit, error: ServiceError, key: CacheKey, range: String? = nil, plan: LoadPlan,
        finish: @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        events.emit(plan.id, .cache(.servedAfterError(fallback.tier, key: key.description)))
        plan.logger?.debug(
            "network failed; serving the cached response", metadata: ["courier.error.code": "\(error.code)"])
        let now = configuration.now()
        let stale = !HTTPCacheRules.freshness(of: fallback.response, now: now, shared: fallback.tier == .shared).isFresh
        let unvalidated = HTTPCacheRules.unvalidated(fallback.response)
        let execution = Execution.cached(
            range.flatMap { HTTPCacheRules.partial(unvalidated, range: $0) } ?? unvalidated,
            source: ResponseSource(fallback.tier), now: now, isStale: stale, networkError: error)
        return (try await finish(execution), execution)
    }

    /// The entry to store for a network response, or nil when it may not be stored under `policy`.
    nonisolated func storable(
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
            status: head.status, headerFields: HTTPCacheRules.storedFields(of: head),
            body: execution.response.body, requestTime: requestTime, responseTime: responseTime,
            variant: HTTPCacheRules.variant(of: request, responseFields: head.headerFields))
        // Without validators an entry is of little use once stale: let stores drop it a while later.
        if policy.mode == .http { entry.expiresAt = HTTPCacheRules.retainedUntil(entry) }
        return entry
    }

    /// Stores `entry`, the response to `request`, in `tiers` (a 206 combined with the part stored
    /// before it, ``HTTPCacheRules/combined(_:with:)``); under `CachePolicy.http`, a tier
    /// the fleet shares only when a shared cache may keep it (``HTTPCacheRules/sharedMayStore``:
    /// never `private`, and an answer to `Authorization` only when it allows it). Policies that
    /// choose their own freshness (`cacheElseNetwork`, `networkElseCache`) store where they say.
    nonisolated func store(
        _ entry: CachedResponse, key: CacheKey, tiers: CachePolicy.Tiers, cache: TieredCache, plan: LoadPlan,
        request: HTTPRequest?
    ) async {
        var tiers = tiers
        if plan.cachePolicy.mode == .http, tiers.contains(.shared),
            !HTTPCacheRules.sharedMayStore(request: request ?? plan.request, responseFields: entry.headerFields)
        {
            tiers.remove(.shared)
            plan.logger?.trace("not stored in the shared tier: the response is for one user")
        }
        var entry = entry
        if entry.status == .partialContent {
            // A part stays in this instance's tiers (combining is not atomic across a fleet),
            // and joins the stored part of the same representation (RFC 9111, section 3.4),
            // unless a tier holds the whole already.
            tiers.remove(.shared)
            var largest: CachedResponse?
            for tier in [CachePolicy.Tiers.memory, .disk] where tiers.contains(tier) {
                let stored = await cache.lookup(key, in: tier)?.response
                guard let joined = HTTPCacheRules.combined(entry, with: stored) else { return }
                if joined.body.count > largest?.body.count ?? -1 { largest = joined }
            }
            guard let largest else { return }
            entry = largest
        }
        guard !tiers.isEmpty else { return }
        if let logger = plan.logger, logger.logLevel <= .debug {
            let ignored = CachedResponse.parseTags(in: entry.headerFields).ignored
            if !ignored.isEmpty {
                logger.debug(
                    "purge tags ignored: not 1 to 1,024 visible ASCII characters other than a comma, or past the 256th",
                    metadata: ["courier.cache.tags": "\(ignored.prefix(4).map { $0.prefix(64) })"])
            }
        }
        let kept = await cache.store(entry, for: key, in: tiers)
        for tier in [CacheTier.memory, .disk, .shared] where kept.contains(tier.policyTiers) {
            events.emit(plan.id, .cache(.stored(tier, key: key.description, bytes: entry.cost)))
        }
    }

    /// Revalidates in the background (`stale-while-revalidate`), as its own load with a new id,
    /// unless a refresh of `key` runs already: the loads served the stale entry meanwhile get
    /// one revalidation between them (and a refresh started after it finds the fresh entry and
    /// sends nothing). Under fleet collapsing, one instance of the fleet refreshes a key at a
    /// time (``fleetRefreshLease(_:key:)``).
    nonisolated func refreshInBackground<T: Sendable>(
        _ plan: LoadPlan, key: CacheKey,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) {
        guard refreshing.withLock({ $0.insert(key).inserted }) else { return }
        var refresh = plan
        refresh.id = events.makeRequestID()
        // The refresh outlives the caller's load: it logs to the background logger.
        refresh.logger = LoadPlan.logger(backgroundLogger, id: refresh.id)
        refresh.options.logger = refresh.logger  // the transport's lines for it too
        refresh.taskDeadline = nil  // nobody waits for it: the caller's deadline is not its own
        plan.logger?.debug(
            "serving stale; refreshing in the background", metadata: ["courier.refresh.id": "\(refresh.id)"])
        // A coordinator shut down runs no more background work, nor loads: its set may keep the key.
        Self.startBackground(on: self) { [refresh] coordinator in
            switch await coordinator.fleetRefreshLease(refresh, key: key) {
            case .heldElsewhere:
                refresh.logger?.debug("another instance of the fleet refreshes this entry; not refreshing")
                // The loads served the stale entry meanwhile do not each ask for the lease again.
                try? await Task.sleep(for: .milliseconds(250))
            case .none:
                _ = try? await coordinator.run(refresh, intent: CacheIntent<T>.refresh, finish: finish)
            case .held(let lease, let leasing):
                // The instance that held the lease before may have refreshed the shared entry
                // already (its announcement still on its way here): then that is the answer.
                var answered = await coordinator.adoptFreshSharedEntry(refresh, key: key)
                if !answered {
                    answered =
                        (try? await coordinator.run(refresh, intent: CacheIntent<T>.refresh, finish: finish)) != nil
                }
                await coordinator.giveBack(lease, to: leasing, answered: answered, plan: refresh)
            }
            coordinator.refreshing.withLock { _ = $0.remove(key) }
        }
    }

    /// Whether `error` says the origin gave no answer: no connection, no name, a timeout, the
    /// connection closed before a response head. Not a TLS or pinning failure (it may be an
    /// impostor, which a stored answer would hide), a body cut short (a head came, which may
    /// have said something new), nor an open circuit (a run of 5xx answers opens it too).
    static func isUnreachable(_ error: ServiceError) -> Bool {
        switch error.code {
        case .cannotConnect, .dnsFailed, .timedOut, .connectionClosed, .networkFailed:
            true
        default:
            false
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
