internal import CourierCore

/// What ``FlightMachine`` holds without looking inside: keys, the continuations of waiting loads,
/// the handles of flight tasks, transfer cancellations and the continuations of drain waiters.
/// ``FlightTable`` fills them with the real things; the machine's tests with plain numbers.
protocol FlightTokens {
    associatedtype Key: Hashable & Sendable
    associatedtype Waiter: Sendable
    associatedtype TaskHandle: Sendable
    associatedtype Cancellation: Sendable
    associatedtype Drainer: Sendable
}

/// The flights of ``FlightTable`` as a pure state machine: every transfer in flight, the loads
/// waiting for it, and which key a new load joins. No lock, no continuation is resumed, no
/// task is touched, no clock is read: each event returns what the table must do.
///
/// Events and what they return:
/// - ``admitLeader(id:key:cancellation:taskIsCancelled:)``: a load that can lead on its own
///   task asks first; `leads` registers its flight, `joins` sends it to ``admit``.
/// - ``admit(id:key:rejectsDuplicates:waiter:reportsShutDown:cancellation:taskIsCancelled:)``:
///   a load refused (shut down, cancelled, a rejected duplicate), joined to a flight, leading
///   one in a task to start, or leading one on its own task.
/// - ``taskStarted(_:task:)``: the flight's task exists; cancel it at once if it was cancelled
///   meanwhile.
/// - ``land(_:handingOver:)``: a transfer ended. Its waiters are answered, or, when its leader
///   left (cancelled) and loads still wait, the first of them takes the flight over.
/// - ``leave(_:)``: a waiting load was cancelled; the last one out cancels the flight's task.
/// - ``shutDown(cancelling:)``: refuse new loads; when cancelling, fail every waiter and
///   cancel every transfer.
/// - ``waitForDrain(_:)``: a drain waiter is answered when the last flight lands.
struct FlightMachine<Tokens: FlightTokens>: Sendable {
    typealias Key = Tokens.Key

    /// One transfer, named by the id of the load that started it.
    struct Flight: Sendable {
        /// What others join it by (nil: nobody can).
        var key: Key?
        /// `nil` while the task is being created, and for a transfer on its leader's task.
        var task: Tokens.TaskHandle?
        /// What cancels a transfer that runs on its leader's task.
        var cancellation: Tokens.Cancellation?
        /// Loads that joined after the first (allocated only when someone joins).
        var joiners: [UInt64] = []
        /// Loads waiting right now.
        var waiting = 1
        /// Set once its last waiter left, or shutdown cancelled it.
        var isCancelled = false
    }

    /// A load waiting for a flight.
    struct Waiting: Sendable {
        var flight: UInt64
        var waiter: Tokens.Waiter
        var coalesced: Bool
        /// Whether shutdown fails it with `shutDown` rather than `cancelled` (transfers to a
        /// file or a reader, which end because the coordinator stopped, not their caller).
        var reportsShutDown = false
        /// How the load would cancel a transfer it leads (nil: it cannot lead on its task).
        var cancellation: Tokens.Cancellation?
    }

    private(set) var isShutDown = false
    private(set) var cancelsInFlight = false
    /// Flights whose transfer has not landed yet (cancelled ones included).
    private(set) var flights: [UInt64: Flight] = [:]
    /// Flights a new load may still join.
    private(set) var joinable: [Key: UInt64] = [:]
    /// Waiting loads, by load id.
    private(set) var waiting: [UInt64: Waiting] = [:]
    private var drainers: [Tokens.Drainer] = []

    // MARK: admission

    enum LeaderAdmission {
        case refused(ServiceError)
        /// A flight for its key is in flight: admit it with ``admit``, which decides.
        case joins
        /// Its flight is registered; it runs the transfer on its own task.
        case leads
    }

    /// Registers flight `id`, led on its caller's task, unless a flight for `key` is in flight.
    mutating func admitLeader(
        id: UInt64, key: Key?, cancellation: Tokens.Cancellation, taskIsCancelled: Bool
    ) -> LeaderAdmission {
        if let refusal = refusal(taskIsCancelled: taskIsCancelled) { return .refused(refusal) }
        if let key, joinable[key] != nil { return .joins }
        register(id, key: key, cancellation: cancellation)
        return .leads
    }

    enum Admission {
        /// Resume the load's waiter with this error.
        case refused(ServiceError)
        /// The load waits for another's flight.
        case joined
        /// The load leads flight `id`: start its task.
        case startTask
        /// The load leads flight `id` on its own task: resume its waiter so that it runs it.
        case leadsInline
    }

    /// Admits load `id`: joins the flight for `key`, or leads one (on its own task when it
    /// brings a `cancellation`). With `rejectsDuplicates` a load that would join is refused.
    mutating func admit(
        id: UInt64, key: Key?, rejectsDuplicates: Bool, waiter: Tokens.Waiter, reportsShutDown: Bool,
        cancellation: Tokens.Cancellation?, taskIsCancelled: Bool
    ) -> Admission {
        if let refusal = refusal(taskIsCancelled: taskIsCancelled) { return .refused(refusal) }
        if let key, let serial = joinable[key] {
            if rejectsDuplicates {
                return .refused(
                    ServiceError(.redundantRequest, "An identical request is in flight and duplicates are rejected."))
            }
            flights[serial]?.joiners.append(id)
            flights[serial]?.waiting += 1
            waiting[id] = Waiting(flight: serial, waiter: waiter, coalesced: true, cancellation: cancellation)
            return .joined
        }
        register(id, key: key, cancellation: cancellation)
        // A leader on its own task waits for nothing: no `Waiting` entry.
        if cancellation != nil { return .leadsInline }
        waiting[id] = Waiting(flight: id, waiter: waiter, coalesced: false, reportsShutDown: reportsShutDown)
        return .startTask
    }

    /// Why a load is refused before it joins or leads: shut down, or its task was cancelled.
    private func refusal(taskIsCancelled: Bool) -> ServiceError? {
        if isShutDown { return .coordinatorShutDown }
        if taskIsCancelled { return .cancelled() }
        return nil
    }

    private mutating func register(_ id: UInt64, key: Key?, cancellation: Tokens.Cancellation?) {
        flights[id] = Flight(key: key, cancellation: cancellation)
        if let key { joinable[key] = id }
    }

    /// Flight `serial`'s task was created. Returns whether to cancel it at once (it was
    /// cancelled, or shutdown cancelled every flight, while the task was being created).
    mutating func taskStarted(_ serial: UInt64, task: Tokens.TaskHandle) -> Bool {
        // Read and written back whole: an optional-chained write through the subscript
        // allocates a coroutine frame for a value this large.
        guard var flight = flights[serial] else { return false }  // already landed
        flight.task = task
        flights[serial] = flight
        return cancelsInFlight || flight.isCancelled
    }

    // MARK: landing

    enum Landing {
        /// Its leader left and `waiter`'s load takes the flight over, on its own task.
        case handedOver(to: Tokens.Waiter)
        /// Answer `first` (the leader, when it waited on a task) and then `others` with the
        /// result; `shared` when loads joined (they share decodes). `drained`: resume these,
        /// the last flight landed.
        case landed(first: Waiting?, others: [Waiting], shared: Bool, drained: [Tokens.Drainer])
    }

    /// Flight `serial`'s transfer ended. When `handingOver` (its leader left, cancelled), the
    /// first load still waiting takes it over, unless shutdown cancels every flight.
    mutating func land(_ serial: UInt64, handingOver: Bool) -> Landing {
        if handingOver, !cancelsInFlight, var flight = flights[serial] {
            while !flight.joiners.isEmpty {
                let id = flight.joiners.removeFirst()
                guard let next = waiting[id], next.flight == serial else { continue }
                waiting[id] = nil
                flight.waiting -= 1  // the leader that left; the next was counted when it joined
                flight.cancellation = next.cancellation
                flights[serial] = flight
                return .handedOver(to: next.waiter)
            }
        }
        guard let flight = flights.removeValue(forKey: serial) else {
            return .landed(first: nil, others: [], shared: false, drained: [])
        }
        if let key = flight.key { removeJoinable(key, of: serial) }
        var first: Waiting?
        if let leader = waiting[serial], leader.flight == serial { first = waiting.removeValue(forKey: serial) }
        var others: [Waiting] = []
        for id in flight.joiners {
            if let joiner = waiting[id], joiner.flight == serial {
                waiting[id] = nil
                others.append(joiner)
            }
        }
        var drained: [Tokens.Drainer] = []
        if flights.isEmpty { swap(&drained, &drainers) }
        return .landed(first: first, others: others, shared: !flight.joiners.isEmpty, drained: drained)
    }

    /// Makes flight `serial` no longer joinable by `key`, unless another flight took the key.
    /// One lookup: comparing two keys in full costs more than hashing one.
    private mutating func removeJoinable(_ key: Key, of serial: UInt64) {
        guard let index = joinable.index(forKey: key), joinable.values[index] == serial else { return }
        joinable.remove(at: index)
    }

    // MARK: leaving, shutdown, drain

    /// Load `id` was cancelled while it waited: resume `waiter` with `cancelled`; when it was the
    /// last one waiting for its flight, cancel `task` (the flight can no longer be joined).
    mutating func leave(_ id: UInt64) -> (waiter: Tokens.Waiter?, cancel: Tokens.TaskHandle?) {
        guard let left = waiting.removeValue(forKey: id), var flight = flights[left.flight] else { return (nil, nil) }
        flight.waiting -= 1
        var task: Tokens.TaskHandle?
        if flight.waiting == 0 {
            flight.isCancelled = true
            task = flight.task
            if let key = flight.key { removeJoinable(key, of: left.flight) }
        }
        flights[left.flight] = flight
        return (left.waiter, task)
    }

    struct ShutDownActions {
        /// Fail these waiters (with `shutDown` when `reportsShutDown`, else `cancelled`).
        var failed: [Waiting] = []
        var tasksToCancel: [Tokens.TaskHandle] = []
        var cancellations: [Tokens.Cancellation] = []
    }

    /// Refuses new loads from now on; when `cancelling`, every waiter fails and every transfer
    /// is cancelled (their flights still land, to answer drain waiters).
    mutating func shutDown(cancelling: Bool) -> ShutDownActions {
        isShutDown = true
        guard cancelling else { return ShutDownActions() }
        cancelsInFlight = true
        var actions = ShutDownActions(failed: Array(waiting.values))
        waiting = [:]
        joinable = [:]
        for (serial, var flight) in flights {
            flight.waiting = 0
            flight.isCancelled = true
            if let task = flight.task { actions.tasksToCancel.append(task) }
            if let cancellation = flight.cancellation { actions.cancellations.append(cancellation) }
            flights[serial] = flight
        }
        return actions
    }

    /// Registers `drainer` to be resumed when no flight is left; returns true (and keeps
    /// nothing) when none is left now.
    mutating func waitForDrain(_ drainer: Tokens.Drainer) -> Bool {
        if flights.isEmpty { return true }
        drainers.append(drainer)
        return false
    }

    /// Whether a load with `key` would join a flight now (or be refused as its duplicate).
    func isJoinable(_ key: Key) -> Bool { joinable[key] != nil }

    /// Loads waiting for transfers, leaders on their own task included.
    var waiterCount: Int { waiting.count + flights.values.count { $0.cancellation != nil } }

    /// What must hold after every event; the machine's tests check it. Empty when it holds.
    func invariantViolations() -> [String] {
        var violations: [String] = []
        for (key, serial) in joinable {
            guard let flight = flights[serial] else {
                violations.append("key \(key) names landed flight \(serial)")
                continue
            }
            if flight.key != key { violations.append("key \(key) names flight \(serial) of another key") }
            if flight.isCancelled { violations.append("cancelled flight \(serial) is still joinable") }
        }
        for (id, entry) in waiting where flights[entry.flight] == nil {
            violations.append("load \(id) waits for landed flight \(entry.flight)")
        }
        for (serial, flight) in flights where !cancelsInFlight {
            let waiters = waiting.values.count { $0.flight == serial }
            // A leader on its own task counts itself without a `Waiting` entry, until it lands.
            let inline = flight.cancellation != nil && waiting[serial] == nil && !flight.isCancelled ? 1 : 0
            if flight.waiting != waiters + inline && !(flight.isCancelled && flight.waiting == 0) {
                violations.append("flight \(serial) counts \(flight.waiting) waiting, \(waiters + inline) wait")
            }
        }
        if isShutDown, cancelsInFlight, !waiting.isEmpty {
            violations.append("waiters left after a cancelling shutdown")
        }
        if flights.isEmpty, !drainers.isEmpty { violations.append("drain waiters left with no flight") }
        return violations
    }
}
