internal import CourierCore
internal import HTTPTypes
internal import Synchronization

/// The loads of one coordinator that go to the network, counted per host, and the ones that
/// wait for their turn while a host has ``limit`` of them running
/// (``RequestCoordinator/Configuration/maximumLoadsPerHost``).
///
/// Why a queue here when the transport queues what its connections cannot take yet: a load
/// waiting in the transport holds every async frame of its way down (decoding, retries,
/// coalescing, the transfer: about 17 KB of task memory each), while one waiting here holds
/// only its entry point's. With 10,000 loads at once, that is most of the process's memory.
///
/// Kept under a lock, not on the coordinator actor: a load takes and gives back its place
/// without waiting for isolation, and one that finds room pays two short critical sections.
final class HostQueue: Sendable {
    /// What loads are counted by: the request's scheme and authority.
    struct Host: Hashable, Sendable {
        var scheme: String?
        var authority: String?
        /// The authority's hash, computed once with ``KeyHasher``: each load looks its host up
        /// twice, and `Hasher` over a string costs several times more. The scheme seldom tells
        /// two hosts apart (equality still compares it).
        private var authorityHash: Int

        init(_ request: HTTPRequest) {
            scheme = request.scheme
            authority = request.authority
            var hasher = KeyHasher()
            hasher.combine(authority)
            authorityHash = Int(truncatingIfNeeded: hasher.value)
        }

        static func == (lhs: Host, rhs: Host) -> Bool {
            lhs.authorityHash == rhs.authorityHash && lhs.authority == rhs.authority && lhs.scheme == rhs.scheme
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(authorityHash)
        }
    }

    /// Resumed with nil once the load has its place, or with why it has none.
    private typealias Waiter = UnsafeContinuation<Refusal?, Never>

    /// Why a waiting load gets no place. A byte, not a `ServiceError`: the result of the wait
    /// sits in the frames every waiting load holds.
    enum Refusal: Sendable {
        case cancelled, timedOut, shutDown

        var error: ServiceError {
            switch self {
            case .cancelled: .cancelled()
            case .timedOut:
                ServiceError(.timedOut, "The request timed out while waiting for its turn behind other loads of its host.")
            case .shutDown: .coordinatorShutDown
            }
        }
    }

    /// One host's running loads and its waiters in arrival order: `order[head...]` lists their
    /// tickets, and `waiters` holds the ones still waiting (a cancelled or timed-out waiter
    /// leaves `waiters` only, and `next` skips its ticket).
    private struct Line {
        var running = 0
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

    private struct State {
        var lines: [Host: Line] = [:]
        /// The next waiter's ticket: never reused, so a cancellation or a timer that comes
        /// late finds no one rather than a later waiter.
        var nextTicket: UInt64 = 0
        /// How many lines there may be before the idle ones are dropped.
        var dropIdleAt = 64
        var isShutDown = false
    }

    /// Set while a load runs code that may load through the same coordinator before its own
    /// load ends: its decorators (a token refresh that fetches the token). Loads started
    /// there, and the tasks they start, never wait (they take a place only when one is free):
    /// the load that runs them holds a place, and they could otherwise wait for that very one.
    @TaskLocal static var isExempt = false

    /// Loads of one host that run at once, at most.
    let limit: Int
    private let state = LockedValue(State())

    init(limit: Int) {
        precondition(limit > 0, "A host queue needs room for one load at least.")
        self.limit = limit
    }

    /// Takes a place for `host` when one is free. Never waits.
    func enterIfRoom(_ host: Host) -> Bool {
        state.withLock { state in
            if state.lines.count >= state.dropIdleAt { Self.dropIdleLines(&state) }
            // In place, one lookup: `line` is the dictionary's own slot.
            return { (line: inout Line?) in
                guard let running = line?.running else {
                    line = Line(running: 1)
                    return true
                }
                guard running < limit else { return false }
                line?.running = running + 1
                return true
            }(&state.lines[host])
        }
    }

    /// Waits for a place for `host`, after the loads that waited before. Returns `cancelled`
    /// when the task is cancelled, `timedOut` once `deadline` passes, and `shutDown` once the
    /// coordinator shuts down (a load refused so has no place to give back); nil once the
    /// place is taken.
    ///
    /// Returns the error rather than throwing it, and keeps the timer's set-up out of line:
    /// this frame is held for the whole wait, by every load that waits.
    @inline(never)
    nonisolated(nonsending) func enter(_ host: Host, deadline: ContinuousClock.Instant?) async -> Refusal? {
        let ticket = Ticket()
        let timer = deadline.map { expiry(of: host, ticket: ticket, at: $0) }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: Waiter) in
                queue(continuation, for: host, ticket: ticket, deadline: deadline)
            }
        } onCancel: {
            withdraw(host, ticket: ticket, refusal: .cancelled)
        }
    }

    /// Fails the waiter holding `ticket` with `timedOut` at `deadline`, unless cancelled first.
    private func expiry(of host: Host, ticket: Ticket, at deadline: ContinuousClock.Instant) -> Task<Void, Never> {
        Task { [weak self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            if !Task.isCancelled { self?.withdraw(host, ticket: ticket, refusal: .timedOut) }
        }
    }

    /// A waiter's place in its host's line, for its cancellation and its timer to find it.
    private final class Ticket: Sendable {
        let number = Atomic<UInt64>(.max)
    }

    /// Queues `continuation` for `host` under `ticket`; resumes it at once when a place came
    /// free meanwhile, or with the reason it may not wait.
    ///
    /// Cancellation and the timer check under the lock, after queuing is decided: `withdraw`
    /// runs after the task's cancelled flag is set (or after the deadline), so one that runs
    /// before the ticket is written is seen here instead.
    private func queue(_ continuation: Waiter, for host: Host, ticket: Ticket, deadline: ContinuousClock.Instant?) {
        let (admitted, refusal): (Bool, Refusal?) = state.withLock { state in
            if state.isShutDown { return (false, .shutDown) }
            if Task.isCancelled { return (false, .cancelled) }
            if let deadline, deadline <= .now { return (false, .timedOut) }
            let number = state.nextTicket
            state.nextTicket += 1
            // In place: a copy of the line would copy its waiters.
            let admitted = Self.queue(continuation, in: &state.lines[host, default: Line()], limit: limit, ticket: ticket, number: number)
            return (admitted, nil)
        }
        if let refusal {
            continuation.resume(returning: refusal)
        } else if admitted {
            continuation.resume(returning: nil)
        }
    }

    /// Takes a place in `line` when one is free (true), else queues `continuation` there.
    private static func queue(
        _ continuation: Waiter, in line: inout Line, limit: Int, ticket: Ticket, number: UInt64
    ) -> Bool {
        if line.running < limit {
            line.running += 1
            return true
        }
        line.append(continuation, ticket: number)
        ticket.number.store(number, ordering: .relaxed)
        return false
    }

    /// Gives back `host`'s place: to its oldest waiter, if any.
    func leave(_ host: Host) {
        let waiter: Waiter? = state.withLock { state in
            { (line: inout Line?) -> Waiter? in
                assert(line != nil, "A place given back twice, or never taken.")
                if let waiter = line?.next() { return waiter }
                // An idle line stays, until `dropIdleLines`.
                line?.running -= 1
                return nil
            }(&state.lines[host])
        }
        waiter?.resume(returning: nil)
    }

    /// Refuses the waiter holding `ticket`, if it still waits.
    private func withdraw(_ host: Host, ticket: Ticket, refusal: Refusal) {
        let waiter: Waiter? = state.withLock { state in
            let number = ticket.number.load(ordering: .relaxed)
            guard number != .max else { return nil }
            return state.lines[host]?.withdraw(number)
        }
        waiter?.resume(returning: refusal)
    }

    /// Fails every waiter with `shutDown`, and every later one that would wait.
    func shutDown() {
        let waiters: [Waiter] = state.withLock { state in
            state.isShutDown = true
            var waiters: [Waiter] = []
            for host in state.lines.keys {
                while let waiter = state.lines[host]?.next() { waiters.append(waiter) }
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: .shutDown) }
    }

    /// Drops the lines of hosts with no load running or waiting, and sets when to do it again:
    /// a process that talks to a few hosts keeps theirs (a host's next load then finds its
    /// line, with no insertion), one that crawls many does not keep them all; the drops cost
    /// a constant per load, amortized.
    private static func dropIdleLines(_ state: inout State) {
        state.lines = state.lines.filter { $0.value.running > 0 || !$0.value.waiters.isEmpty }
        state.dropIdleAt = max(64, state.lines.count * 2)
    }

    /// Tickets still listed in `host`'s line, withdrawn ones included (a test hook).
    func queuedTickets(of host: Host) -> Int {
        state.withLock { state in state.lines[host].map { $0.order.count - $0.head } ?? 0 }
    }

    /// Hosts with a line, idle ones included (a test hook).
    var lineCount: Int { state.withLock { $0.lines.count } }

    /// Whether no load holds a place or waits (a test hook: nothing leaked).
    var isIdle: Bool { state.withLock { $0.lines.values.allSatisfy { $0.running == 0 && $0.waiters.isEmpty } } }

    /// Loads waiting for their turn right now.
    var waiterCount: Int {
        state.withLock { state in state.lines.values.reduce(0) { $0 + $1.waiters.count } }
    }
}
