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

        /// The host ``name`` names (`scheme://authority`); nil for anything else.
        init?(name: String) {
            let characters = Array(name.utf8)
            guard
                let colon = characters.indices.first(where: { index in
                    characters[index...].starts(with: "://".utf8)
                })
            else { return nil }
            let scheme = String(decoding: characters[..<colon], as: UTF8.self)
            let authority = String(decoding: characters[(colon + 3)...], as: UTF8.self)
            self.scheme = scheme.isEmpty ? nil : String(scheme)
            self.authority = authority.isEmpty ? nil : String(authority)
            var hasher = KeyHasher()
            hasher.combine(self.authority)
            authorityHash = Int(truncatingIfNeeded: hasher.value)
        }

        /// `scheme://authority`, as metrics, events, snapshots and the fleet's host pauses name
        /// it, without any user information (`user:password@`) the authority carries.
        var name: String {
            let visible = authority.map { authority in
                authority.lastIndex(of: "@").map { String(authority[authority.index(after: $0)...]) } ?? authority
            }
            return "\(scheme ?? "")://\(visible ?? "")"
        }

        static func == (lhs: Host, rhs: Host) -> Bool {
            lhs.authorityHash == rhs.authorityHash && lhs.authority == rhs.authority && lhs.scheme == rhs.scheme
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(authorityHash)
        }
    }

    /// Resumed with nil once the load has its place, or with why it has none. Checked in debug
    /// builds (and so in tests and under the sanitizers), where a second resume traps; unchecked
    /// in release builds, where the checked one's canary costs an allocation per waiting load.
    #if DEBUG
    typealias Waiter = CheckedContinuation<Refusal?, Never>
    #else
    typealias Waiter = UnsafeContinuation<Refusal?, Never>
    #endif

    /// Why a waiting load gets no place. A byte, not a `ServiceError`: the result of the wait
    /// sits in the frames every waiting load holds.
    enum Refusal: Sendable {
        case cancelled, timedOut, shutDown

        var error: ServiceError {
            switch self {
            case .cancelled: .cancelled()
            case .timedOut:
                ServiceError(
                    .timedOut, "The request timed out while waiting for its turn behind other loads of its host.")
            case .shutDown: .coordinatorShutDown
            }
        }
    }

    /// The lines (``HostQueueMachine``), under a lock; what it returns is done after the lock
    /// is released.
    typealias Machine = HostQueueMachine<Host, Waiter>

    /// Set while a load runs code that may load through the same coordinator before its own
    /// load ends: its decorators (a token refresh that fetches the token). Loads started
    /// there, and the tasks they start, never wait (they take a place only when one is free):
    /// the load that runs them holds a place, and they could otherwise wait for that very one.
    @TaskLocal static var isExempt = false

    /// Loads of one host that run at once, at most.
    let limit: Int
    private let state = LockedValue(Machine())

    init(limit: Int, initialLineLimit: Int? = nil) {
        precondition(limit > 0, "A host queue needs room for one load at least.")
        self.limit = limit
        if let initialLineLimit { state.withLock { $0.initialLineLimit = initialLineLimit } }
    }

    /// Sets `host`'s own limit (an adaptive one); waiters a higher limit lets in take their
    /// places.
    func setLimit(_ host: Host, to newLimit: Int, version: UInt64 = .max) {
        for waiter in state.withLock({ $0.setLimit(host, to: newLimit, version: version) }) {
            waiter.resume(returning: nil)
        }
    }

    /// `host`'s limit now (a test hook).
    func limit(of host: Host) -> Int { state.withLock { $0.lines[host]?.limit ?? $0.initialLineLimit ?? limit } }

    /// Takes a place for `host` when one is free. Never waits.
    func enterIfRoom(_ host: Host) -> Bool {
        state.withLock { $0.enterIfRoom(host, limit: limit) }
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
            #if DEBUG
            await withCheckedContinuation { queue($0, for: host, ticket: ticket, deadline: deadline) }
            #else
            await withUnsafeContinuation { queue($0, for: host, ticket: ticket, deadline: deadline) }
            #endif
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
        let queued = state.withLock { state -> Machine.Queued in
            let queued = state.queue(
                continuation, for: host, limit: limit, taskIsCancelled: Task.isCancelled,
                deadlinePassed: deadline.map { $0 <= .now } ?? false)
            if case .waits(let number) = queued { ticket.number.store(number, ordering: .relaxed) }
            return queued
        }
        switch queued {
        case .admitted: continuation.resume(returning: nil)
        case .refused(let refusal): continuation.resume(returning: refusal)
        case .waits: break
        }
    }

    /// Gives back `host`'s place: to its oldest waiter, if any.
    func leave(_ host: Host) {
        state.withLock { $0.leave(host) }?.resume(returning: nil)
    }

    /// Refuses the waiter holding `ticket`, if it still waits.
    private func withdraw(_ host: Host, ticket: Ticket, refusal: Refusal) {
        let waiter: Waiter? = state.withLock { state in
            let number = ticket.number.load(ordering: .relaxed)
            guard number != .max else { return nil }
            return state.withdraw(host, ticket: number)
        }
        waiter?.resume(returning: refusal)
    }

    /// Fails every waiter with `shutDown`, and every later one that would wait.
    func shutDown() {
        for waiter in state.withLock({ $0.shutDown() }) { waiter.resume(returning: .shutDown) }
    }

    /// Tickets still listed in `host`'s line, withdrawn ones included (a test hook).
    func queuedTickets(of host: Host) -> Int {
        state.withLock { $0.lines[host].map { $0.order.count - $0.head } ?? 0 }
    }

    /// Hosts with a line, idle ones included (a test hook).
    var lineCount: Int { state.withLock { $0.lines.count } }

    /// Whether no load holds a place or waits (a test hook: nothing leaked).
    var isIdle: Bool { state.withLock { $0.isIdle } }

    /// Loads waiting for their turn right now.
    var waiterCount: Int { state.withLock { $0.waiterCount } }

    /// Loads waiting for their turn right now, by `scheme://authority`, for every host with a
    /// line (0 for a host whose loads all have their place).
    var waitingByHost: [String: Int] {
        // Counted under the lock every load takes; named outside it.
        let counts = state.withLock { state in state.lines.map { ($0.key, $0.value.waiters.count) } }
        var waiting: [String: Int] = [:]
        for (host, count) in counts { waiting[host.name, default: 0] += count }
        return waiting
    }
}
