internal import CourierCaching
internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

/// What the load that leads its process decided with the leasing store.
enum FleetDecision: Sendable {
    /// It holds the lease: it fetches, stores, and gives the lease back.
    case leased(CacheLease)
    /// Another process stored the entry while this one waited (the hit, when the wait read
    /// it through the cache already).
    case found(TieredCache.Hit?)
    /// It fetches itself, without a lease (the wait ran out, or the store failed).
    case fetch
}

extension RequestCoordinator {
    /// The network part of a plain cached `GET` that missed every tier, collapsed across the
    /// fleet when its policy says so (``FleetCollapsing``); otherwise ``fetch(_:request:lookup:cache:finish:)``.
    nonisolated func fetchAcrossFleet<T: Sendable>(
        _ plan: LoadPlan, request: HTTPRequest, lookup: CacheLookup, cache: TieredCache, plainLoad: Bool,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution) {
        let policy = plan.cachePolicy
        guard plainLoad, let fleet = policy.fleetCollapsing, Self.collapses(policy.mode), lookup.hit == nil,
            lookup.revalidating == nil, lookup.otherVariant == nil, lookup.range == nil,
            let leasing = cache.leasingStore(in: policy.tiers)
        else { return try await fetch(plan, request: request, lookup: lookup, cache: cache, finish: finish) }
        let key = lookup.key
        switch await fleetGate.enter(key, id: plan.id) {
        case .fetch:
            return try await fetch(plan, request: request, lookup: lookup, cache: cache, finish: finish)
        case .lookUp:
            if let served = try await serveFleetEntry(plan, request: request, key: key, cache: cache, finish: finish) {
                return served
            }
            return try await fetch(plan, request: request, lookup: lookup, cache: cache, finish: finish)
        case .lead:
            break
        }
        let decision = await leaseOrWait(leasing, key: key, fleet: fleet, plan: plan, cache: cache)
        switch decision {
        case .leased(let lease):
            fleetGate.decided(key, holdsLease: true, found: false)
            let result: Result<(T, Execution), any Error>
            do {
                result = .success(try await fetch(plan, request: request, lookup: lookup, cache: cache, finish: finish))
            } catch {
                result = .failure(error)
            }
            let answered = if case .success = result { true } else { false }
            await release(lease, from: leasing, answered: answered, plan: plan)
            return try result.get()
        case .found(let hit):
            fleetGate.decided(key, holdsLease: false, found: true)
            if let served = try await serveFleetEntry(
                plan, request: request, key: key, cache: cache, hit: hit, finish: finish)
            {
                return served
            }
        case .fetch:
            fleetGate.decided(key, holdsLease: false, found: false)
        }
        return try await fetch(plan, request: request, lookup: lookup, cache: cache, finish: finish)
    }

    /// Takes the lease on `key`, or waits for the entry its holder stores and retakes a lease
    /// that fell free, for at most `fleet.wait`: the pauses and the store's calls count, so a
    /// slow store cannot stretch the wait.
    ///
    /// With a store that notifies (``CacheLeaseNotifying``) and listens, the holder's release
    /// wakes the wait: `stored` serves the entry at once, `notStored` (an answer that could
    /// not be stored) sends the load to the origin at once (every waiter of the fleet
    /// together), `failed` (no answer) makes it try the lease again at once. The holder's
    /// store wakes it sooner (`entryChanged`, before the release): it reads the key through
    /// `cache` and serves what it finds, else waits on. Polls go on, less often, for what no
    /// notification reports (a holder that died, a notification lost). Without one, the load
    /// polls, backing off on the coordinator's clock.
    nonisolated func leaseOrWait(
        _ leasing: any CacheLeasing, key: CacheKey, fleet: FleetCollapsing, plan: LoadPlan, cache: TieredCache
    ) async -> FleetDecision {
        // Watching starts before the first lease attempt, so no release after it goes unseen.
        let watch = (leasing as? any CacheLeaseNotifying)?.watchLease(on: key)
        defer { watch?.end() }
        var waited = Duration.zero
        var pause = FleetCollapsing.firstPoll
        // After an entry change with nothing to serve, the load waits on at once: the holder is
        // still storing, and a release heard during the read (say `notStored`) is still unread.
        var waitsOn = false
        while true {
            let callsStarted = ContinuousClock.now
            if waitsOn && waited < fleet.wait {
                waitsOn = false
            } else {
                if let decision = await attemptLease(
                    leasing, key: key, fleet: fleet, plan: plan, waited: waited, watch: watch)
                {
                    return decision
                }
                waited += ContinuousClock.now - callsStarted
            }
            guard waited < fleet.wait else {
                reportFleet(.leaseWaitTimedOut(key: key.description), plan: plan)
                plan.logger?.debug(
                    "fleet lease still held after the wait; fetching", metadata: ["courier.cache.key": "\(key)"])
                return .fetch
            }
            let notified = watch?.isLive == true
            if notified { pause = max(pause, FleetCollapsing.firstNotifiedPoll) }
            let step = min(pause, fleet.wait - waited)
            if let watch {  // not live yet: a release once it is still wakes the load
                let started = ContinuousClock.now
                let release = await watch.next(within: step, on: configuration.clock)
                guard !Task.isCancelled else { return .fetch }  // the fetch that follows reports it
                switch release {
                case .stored?:
                    // Served by the lookup that follows (one read, not two); an entry the
                    // policy cannot serve sends the load to the origin, as a polled one would.
                    reportFleet(.leaseWaited(key: key.description), plan: plan)
                    return .found(nil)
                case .entryChanged?:
                    // The holder stored (or an entry went), its lease perhaps still held.
                    if let hit = await cache.lookup(key, in: plan.cachePolicy.tiers), hit.response.isWhole {
                        reportFleet(.leaseWaited(key: key.description), plan: plan)
                        return .found(hit)
                    }
                    waited += ContinuousClock.now - started
                    waitsOn = true
                    continue  // nothing to serve: wait on
                case .notStored?:
                    reportFleet(.leaseReleasedUnstored(key: key.description), plan: plan)
                    return .fetch
                case .failed?:
                    waited += ContinuousClock.now - started
                    pause = FleetCollapsing.firstPoll
                    continue  // the lease is free: take it now (one waiter of the fleet will)
                case nil:
                    waited += step
                }
            } else {
                do {
                    try await configuration.clock.sleep(for: step)
                } catch {
                    return .fetch  // cancelled: the fetch that follows reports it
                }
                waited += step
            }
            pause = min(pause * 2, notified ? FleetCollapsing.longestNotifiedPoll : FleetCollapsing.longestPoll)
        }
    }

    /// One look at the fleet: the entry another process stored (once the load has waited), else
    /// the lease when it is free; nil while another holder has it. An unread release on `watch`
    /// is forgotten first (it was an earlier holder's); one heard during the look is kept.
    private nonisolated func attemptLease(
        _ leasing: any CacheLeasing, key: CacheKey, fleet: FleetCollapsing, plan: LoadPlan, waited: Duration,
        watch: LeaseWatch?
    ) async -> FleetDecision? {
        watch?.discardUnread()
        do {
            if waited > .zero, try await leasing.entry(for: key)?.isWhole == true {
                reportFleet(.leaseWaited(key: key.description), plan: plan)
                return .found(nil)
            }
            guard let lease = try await leasing.acquireLease(on: key, for: fleet.lease) else { return nil }
            // Another holder may have stored the entry and left since this load looked: before
            // its first poll, or between its last poll and this lease (a race the PostgreSQL
            // fleet tests hit: two origin requests instead of one).
            if try await leasing.entry(for: key)?.isWhole == true {
                await release(lease, from: leasing, answered: true, plan: plan)
                if waited > .zero { reportFleet(.leaseWaited(key: key.description), plan: plan) }
                return .found(nil)
            }
            reportFleet(.leaseTaken(key: key.description), plan: plan)
            return .leased(lease)
        } catch {
            if !Task.isCancelled { reportFleet(.storeFailed(leasing.tier, reason: "\(error)"), plan: plan) }
            return .fetch
        }
    }

    /// The entry another process stored (`hit`, or read now), served as the policy allows
    /// (nil: it does not).
    private nonisolated func serveFleetEntry<T: Sendable>(
        _ plan: LoadPlan, request: HTTPRequest, key: CacheKey, cache: TieredCache, hit: TieredCache.Hit? = nil,
        finish: nonisolated(nonsending) @escaping @Sendable (Execution) async throws -> T
    ) async throws -> (T, Execution)? {
        let policy = plan.cachePolicy
        var found = hit
        if found == nil { found = await cache.lookup(key, in: policy.tiers) }
        let now = configuration.now()
        guard let found, found.response.isWhole,
            HTTPCacheRules.matchesVariant(found.response, request: request),
            let serve = storedAnswer(
                found.response, policy: policy, request: request, now: now, shared: found.tier == .shared)
        else { return nil }
        events.emit(plan.id, .cache(.hit(found.tier, key: key.description)))
        let execution = Execution.cached(
            HTTPCacheRules.unvalidated(found.response), source: ResponseSource(found.tier), now: now,
            isStale: serve.stale)
        guard let value = try await decodeStored(execution, key: key, cache: cache, plan: plan, finish: finish) else {
            return nil
        }
        if serve.refresh { refreshInBackground(plan, key: key, finish: finish) }
        return (value, execution)
    }

    /// Lets the next load of the lease's key through the fleet gate, and gives the lease back.
    private nonisolated func release(
        _ lease: CacheLease, from leasing: any CacheLeasing, answered: Bool, plan: LoadPlan
    ) async {
        fleetGate.left(lease.key)
        await giveBack(lease, to: leasing, answered: answered, plan: plan)
    }

    /// Gives `lease` back to `leasing` (saying whether its holder got an answer, when the store
    /// can tell its waiters), in a task of its own so that a cancelled caller still does; a
    /// failure is reported and otherwise ignored (the lease expires). A background refresh's
    /// lease is given back here directly: it never passed the fleet gate.
    nonisolated func giveBack(
        _ lease: CacheLease, to leasing: any CacheLeasing, answered: Bool, plan: LoadPlan
    ) async {
        let outcome = await Task {
            if let notifying = leasing as? any CacheLeaseNotifying {
                try await notifying.releaseLease(lease, answered: answered)
            } else {
                try await leasing.releaseLease(lease)
            }
        }.result
        if case .failure(let error) = outcome {
            reportFleet(.storeFailed(leasing.tier, reason: "\(error)"), plan: plan)
        }
    }

    /// Whether a background refresh of `key` may run, under fleet collapsing.
    enum RefreshLease: Sendable {
        /// No fleet collapsing, no leasing store, or the store failed: refresh.
        case none
        /// This instance holds the fleet's lease: refresh, then release it.
        case held(CacheLease, any CacheLeasing)
        /// Another instance holds it: it refreshes the shared entry for the fleet (a stale
        /// entry the whole fleet read, after a soft purge say, costs the origin one request).
        case heldElsewhere
    }

    /// Takes the fleet's lease on `key` for a background refresh, without waiting.
    nonisolated func fleetRefreshLease(_ plan: LoadPlan, key: CacheKey) async -> RefreshLease {
        let policy = plan.cachePolicy
        guard let fleet = policy.fleetCollapsing, Self.collapses(policy.mode), let cache = configuration.cache,
            let leasing = cache.leasingStore(in: policy.tiers)
        else { return .none }
        do {
            guard let lease = try await leasing.acquireLease(on: key, for: fleet.lease) else { return .heldElsewhere }
            return .held(lease, leasing)
        } catch {
            reportFleet(.storeFailed(leasing.tier, reason: "\(error)"), plan: plan)
            return .none
        }
    }

    /// When the shared tier holds a fresh entry for `key` (another instance refreshed it), copies
    /// it to the tiers above the shared one and returns true: the refresh is done.
    nonisolated func adoptFreshSharedEntry(_ plan: LoadPlan, key: CacheKey) async -> Bool {
        let policy = plan.cachePolicy
        guard let cache = configuration.cache, policy.tiers.contains(.shared),
            let hit = await cache.lookup(key, in: .shared), hit.tier == .shared, hit.response.isWhole,
            HTTPCacheRules.matchesVariant(hit.response, request: plan.request),
            let answer = storedAnswer(
                hit.response, policy: policy, request: plan.request, now: configuration.now(), shared: true),
            !answer.stale, !answer.refresh
        else { return false }
        await cache.store(hit.response, for: key, in: policy.tiers.subtracting(.shared))
        return true
    }

    private nonisolated func reportFleet(_ event: CacheEvent, plan: LoadPlan) {
        events.emit(plan.id, .cache(event))
        LoadTelemetry.current?.fleetCollapsing(event.name.description)
        CourierMetrics.countStoreFailure(event, configured: configuration.metricsFactory)
    }

    /// Whether loads under `mode` collapse across the fleet: those a stored entry answers.
    static func collapses(_ mode: CachePolicy.Mode) -> Bool {
        switch mode {
        case .http, .cacheElseNetwork: true
        case .networkOnly, .cacheOnly, .networkElseCache: false
        }
    }
}

extension CacheIntent {
    /// Whether this is a plain load (neither `updates()` nor a background refresh).
    var isLoad: Bool {
        if case .load = self { return true }
        return false
    }
}

extension CachedResponse {
    /// Whether this is a response a plain load may be answered with: not a stored part (a 206,
    /// which answers only the ranges it holds).
    var isWhole: Bool { status != .partialContent }
}
