/// The places of ``HostQueue`` as a pure state machine: per host, how many loads hold a place
/// and which wait, in arrival order. No lock, no continuation is resumed, no clock is read, no
/// timer is set: each event returns what the queue must do. Generic over what it holds, so its
/// tests use plain values.
///
/// Events and what they return:
/// - ``enterIfRoom(_:limit:)``: a place when one is free, never a wait.
/// - ``queue(_:for:limit:taskIsCancelled:deadlinePassed:)``: a place now, a refusal, or a
///   ticket in the host's line.
/// - ``leave(_:)``: a place given back; it goes to the host's oldest waiter, if any.
/// - ``withdraw(_:ticket:)``: a waiter cancelled or timed out leaves its line.
/// - ``shutDown()``: every waiter is refused, and every later one that would wait.
struct HostQueueMachine<Host: Hashable & Sendable, Waiter: Sendable>: Sendable {
    /// One host's running loads and its waiters in arrival order: `order[head...]` lists their
    /// tickets, and `waiters` holds the ones still waiting (a cancelled or timed-out waiter
    /// leaves `waiters` only, and `next` skips its ticket).
    struct Line: Sendable {
        var running = 0
        /// This host's own limit (an adaptive one), in place of the queue's, and the version
        /// it came with (a change handed over late, after a newer one, is ignored).
        var limit: Int?
        var limitVersion: UInt64 = 0
        var order: [UInt64] = []
        var head = 0
        var waiters: [UInt64: Waiter] = [:]

        mutating func append(_ waiter: Waiter, ticket: UInt64) {
            order.append(ticket)
            waiters[ticket] = waiter
        }

        /// Removes and returns the oldest waiter.
        mutating func next() -> Waiter? {
            while head < order.count {
                let ticket = order[head]
                head += 1
                if let waiter = waiters.removeValue(forKey: ticket) {
                    compact()
                    return waiter
                }
            }
            compact()
            return nil
        }

        /// Drops the tickets already served, once they are half the list.
        private mutating func compact() {
            if head == order.count {
                order.removeAll(keepingCapacity: order.count <= 1024)
                head = 0
                // No waiter left: a burst's storage goes, since an idle line is kept.
                if waiters.capacity > 64 { waiters = [:] }
            } else if head >= 1024, head * 2 >= order.count {
                order.removeFirst(head)
                head = 0
            }
        }

        /// Removes the waiter holding `ticket`, if it still waits. Its ticket stays in `order`
        /// until `next` passes it, unless withdrawn tickets outnumber the waiting ones (many
        /// timeouts while the places are held long): then `order` keeps the waiting ones only.
        mutating func withdraw(_ ticket: UInt64) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: ticket) else { return nil }
            let queued = order.count - head
            if waiters.isEmpty || (queued >= 1024 && queued >= 2 * waiters.count) {
                order = order[head...].filter { waiters[$0] != nil }
                head = 0
                compact()
            }
            return waiter
        }
    }

    private(set) var lines: [Host: Line] = [:]
    /// The next waiter's ticket: never reused, so a cancellation or a timer that comes late
    /// finds no one rather than a later waiter.
    private(set) var nextTicket: UInt64 = 0
    /// How many lines there may be before the idle ones are dropped.
    private var dropIdleAt = 64
    private(set) var isShutDown = false
    /// The limit each new line starts with (an adaptive limit's initial one); nil: the queue's.
    var initialLineLimit: Int?

    /// Takes a place for `host` when one of `limit` is free. Never waits.
    mutating func enterIfRoom(_ host: Host, limit: Int) -> Bool {
        if lines.count >= dropIdleAt { dropIdleLines() }
        // In place, one lookup: `line` is the dictionary's own slot.
        return { (line: inout Line?) in
            guard let running = line?.running else {
                line = Line(running: 1, limit: initialLineLimit)
                return true
            }
            guard running < line?.limit ?? limit else { return false }
            line?.running = running + 1
            return true
        }(&lines[host])
    }

    enum Queued: Equatable, Sendable {
        /// Resume the waiter at once: it has its place.
        case admitted
        /// Resume the waiter at once with this refusal.
        case refused(HostQueue.Refusal)
        /// The waiter waits under this ticket (for ``withdraw(_:ticket:)``).
        case waits(ticket: UInt64)
    }

    /// Queues `waiter` for `host` behind the loads that came first, or gives it a place now
    /// when one came free meanwhile, or refuses it (shut down, cancelled, out of time).
    mutating func queue(
        _ waiter: Waiter, for host: Host, limit: Int, taskIsCancelled: Bool, deadlinePassed: Bool
    ) -> Queued {
        if isShutDown { return .refused(.shutDown) }
        if taskIsCancelled { return .refused(.cancelled) }
        if deadlinePassed { return .refused(.timedOut) }
        let number = nextTicket
        nextTicket += 1
        // In place: a copy of the line would copy its waiters.
        return { (line: inout Line) -> Queued in
            if line.running < line.limit ?? limit {
                line.running += 1
                return .admitted
            }
            line.append(waiter, ticket: number)
            return .waits(ticket: number)
        }(&lines[host, default: Line(limit: initialLineLimit)])
    }

    /// Gives back `host`'s place: returns its oldest waiter, who takes it, if any.
    mutating func leave(_ host: Host) -> Waiter? {
        { (line: inout Line?) -> Waiter? in
            assert(line != nil, "A place given back twice, or never taken.")
            // Over a limit that was lowered, the place goes rather than to a waiter.
            if let running = line?.running, running <= line?.limit ?? .max, let waiter = line?.next() {
                return waiter
            }
            // An idle line stays, until `dropIdleLines`.
            line?.running -= 1
            return nil
        }(&lines[host])
    }

    /// Sets `host`'s own limit; returns the waiters a higher limit lets in, who take their
    /// places.
    mutating func setLimit(_ host: Host, to newLimit: Int, version: UInt64 = .max) -> [Waiter] {
        { (line: inout Line) -> [Waiter] in
            guard version == .max || version > line.limitVersion else { return [] }
            if version != .max { line.limitVersion = version }
            line.limit = max(newLimit, 1)
            var admitted: [Waiter] = []
            while line.running < newLimit, let waiter = line.next() {
                line.running += 1
                admitted.append(waiter)
            }
            return admitted
        }(&lines[host, default: Line(limit: initialLineLimit)])
    }

    /// Takes the waiter holding `ticket` out of `host`'s line, if it still waits.
    mutating func withdraw(_ host: Host, ticket: UInt64) -> Waiter? {
        lines[host]?.withdraw(ticket)
    }

    /// Refuses every waiter from now on; returns those waiting now, to refuse.
    mutating func shutDown() -> [Waiter] {
        isShutDown = true
        var waiters: [Waiter] = []
        for host in lines.keys {
            while let waiter = lines[host]?.next() { waiters.append(waiter) }
        }
        return waiters
    }

    /// Drops the lines of hosts with no load running or waiting, and sets when to do it again:
    /// a process that talks to a few hosts keeps theirs (a host's next load then finds its
    /// line, with no insertion), one that crawls many does not keep them all; the drops cost
    /// a constant per load, amortized.
    private mutating func dropIdleLines() {
        // A dropped line's own limit goes with it: the next load starts from the initial one
        // until the host's next change, erring on the safe side.
        lines = lines.filter { $0.value.running > 0 || !$0.value.waiters.isEmpty }
        dropIdleAt = max(64, lines.count * 2)
    }

    /// Loads waiting for their turn right now.
    var waiterCount: Int { lines.values.reduce(0) { $0 + $1.waiters.count } }

    /// Whether no load holds a place or waits.
    var isIdle: Bool { lines.values.allSatisfy { $0.running == 0 && $0.waiters.isEmpty } }

    /// What must hold after every event, for `limit`; the machine's tests check it.
    func invariantViolations(limit: Int) -> [String] {
        var violations: [String] = []
        for (host, line) in lines {
            let limit = line.limit ?? limit
            if line.running > limit, line.limit == nil {
                violations.append("\(host): \(line.running) running over the limit \(limit)")
            }
            if line.running < 0 { violations.append("\(host): \(line.running) running") }
            if !line.waiters.isEmpty && line.running < limit {
                violations.append("\(host): a load waits while a place is free")
            }
            let listed = Set(line.order[line.head...])
            if !Set(line.waiters.keys).isSubset(of: listed) { violations.append("\(host): a waiter is not in line") }
            if line.order[line.head...].contains(where: { $0 >= nextTicket }) {
                violations.append("\(host): a ticket from the future")
            }
        }
        if isShutDown, waiterCount > 0 { violations.append("waiters left after shutdown") }
        return violations
    }
}
