internal import CourierCore
internal import HTTPTypes

extension RequestCoordinator {
    /// Takes `plan`'s turn in its host's line (``HostQueue``) when the load goes straight to the
    /// network: at once while the host has room, else after the loads that came first.
    ///
    /// Returns the host to give the turn back to (``HostQueue/leave(_:)``), or nil when the
    /// load took none: the coordinator has no limit, the load reads the cache or has a
    /// responder, a decorator started it, or it would join an identical transfer in flight
    /// (or be refused as its duplicate), which never waits. A load that waits has its first
    /// attempt's total timeout shortened by the wait, so that it counts from when the load
    /// began; its wait ends with its deadline (``LoadPlan/deadline``).
    ///
    /// The limit is approximate in two ways, both brief: identical loads that come while the
    /// host has room each take a place (only a load that would wait asks whether it can join),
    /// and a load that found a transfer to join, which has landed by the time it gets there,
    /// sends without a place.
    @inline(__always)
    nonisolated(nonsending) func takeTurn(
        _ plan: LoadPlan
    ) async throws(ServiceError) -> (host: HostQueue.Host?, plan: LoadPlan) {
        // The plan goes in and out by value, not `inout`: an address taken across a suspension
        // point costs a task allocation.
        guard let hostQueue, goesStraightToNetwork(plan) else { return (nil, plan) }
        let host = HostQueue.Host(plan.request)
        if hostQueue.enterIfRoom(host) { return (host, plan) }
        // The wait, inline: a frame of its own would be one more slab of task memory per
        // waiting load. What surrounds it is synchronous and out of line.
        if HostQueue.isExempt || wouldJoin(plan) { return (nil, plan) }
        let deadline = Self.deadline(of: plan)
        if let refusal = await hostQueue.enter(host, deadline: deadline) { try failTurn(plan, refusal) }
        guard let deadline else { return (host, plan) }
        return (host, try shortenTimeout(of: plan, to: deadline, host: host, in: hostQueue))
    }

    /// Whether `plan` goes to the network without reading the cache first (an unsafe method
    /// may still invalidate entries) and without a responder.
    private nonisolated func goesStraightToNetwork(_ plan: LoadPlan) -> Bool {
        guard plan.buildError == nil, plan.stub == nil, plan.receiver == nil else { return false }
        if configuration.cache != nil, plan.cachePolicy.usesCache { return false }
        return plan.cachePolicy.mode != .cacheOnly
    }

    /// Whether `plan`'s load would join an identical transfer in flight (or be refused as its
    /// duplicate). Only an undecorated request's key is known before the load starts.
    @inline(never)
    private nonisolated func wouldJoin(_ plan: LoadPlan) -> Bool {
        guard plan.decorators.isEmpty, let key = flightKey(of: plan.request, plan: plan) else { return false }
        return flights.isJoinable(key)
    }

    /// When `plan`'s total timeout or its deadline runs out, whichever comes first. Out of
    /// line: reading the options copies them.
    @inline(never)
    private static func deadline(of plan: LoadPlan) -> ContinuousClock.Instant? {
        let timeout = plan.options.timeout.map { plan.started + $0 }
        guard let deadline = plan.deadline?.instant else { return timeout }
        return timeout.map { min($0, deadline) } ?? deadline
    }

    /// Reports a load refused while waiting for its turn (started, then failed), and throws
    /// its error. Throws rather than returning it: a returned error would sit in the frame
    /// every waiting load holds.
    @inline(never)
    private nonisolated func failTurn(_ plan: LoadPlan, _ refusal: HostQueue.Refusal) throws(ServiceError) -> Never {
        if plan.operation != nil { events.setOperation(plan.operation, for: plan.id) }
        defer { if plan.operation != nil { events.setOperation(nil, for: plan.id) } }
        throw failed(plan, error: refusal.error, telemetry: started(plan, background: false))
    }

    /// Leaves `plan`'s first attempt the part of its total timeout that its wait left (its
    /// retries get the whole timeout), or gives the turn back and fails with `timedOut` when
    /// nothing is left.
    @inline(never)
    private nonisolated func shortenTimeout(
        of plan: LoadPlan, to deadline: ContinuousClock.Instant, host: HostQueue.Host, in hostQueue: HostQueue
    ) throws(ServiceError) -> LoadPlan {
        var plan = plan
        let left = deadline - .now
        guard left > .zero else {
            hostQueue.leave(host)
            try failTurn(plan, .timedOut)
        }
        plan.retryTimeout = plan.options.timeout
        plan.options.timeout = left
        return plan
    }

    /// Gives `host`'s turn back, when the load took one.
    @inline(__always)
    nonisolated func leaveTurn(_ host: HostQueue.Host?) {
        if let host { hostQueue?.leave(host) }
    }
}
