import CourierCore
import CourierTestServer
import Testing

@testable import CourierServices

/// ``FlightMachine`` on its own: each transition, then thousands of seeded random event
/// sequences with the invariants checked after every step. No task, no lock, no clock.
@Suite("Flight machine: coalescing's transitions and invariants")
struct FlightMachineTests {
    /// Keys, waiters, tasks, cancellations and drain waiters are plain numbers here.
    enum Tokens: FlightTokens {
        typealias Key = Int
        typealias Waiter = UInt64
        typealias TaskHandle = UInt64
        typealias Cancellation = UInt64
        typealias Drainer = Int
    }

    typealias Machine = FlightMachine<Tokens>

    static func admit(
        _ machine: inout Machine, _ id: UInt64, key: Int?, inline: Bool = false, rejectsDuplicates: Bool = false,
        cancelled: Bool = false
    ) -> Machine.Admission {
        machine.admit(
            id: id, key: key, rejectsDuplicates: rejectsDuplicates, waiter: id, reportsShutDown: false,
            cancellation: inline ? id : nil, taskIsCancelled: cancelled)
    }

    // MARK: transitions, one by one

    @Test func theFirstLoadLeadsAndTheNextJoins() {
        var machine = Machine()
        guard case .startTask = Self.admit(&machine, 1, key: 7) else {
            Issue.record("first must lead")
            return
        }
        guard case .joined = Self.admit(&machine, 2, key: 7) else {
            Issue.record("second must join")
            return
        }
        #expect(machine.isJoinable(7))
        #expect(machine.waiterCount == 2)
        let cancelNow = machine.taskStarted(1, task: 100)
        #expect(!cancelNow)
        guard case .landed(let first, let others, let shared, let drained) = machine.land(1, handingOver: false) else {
            Issue.record("must land")
            return
        }
        #expect(first?.waiter == 1 && first?.coalesced == false)
        #expect(others.map(\.waiter) == [2] && others.allSatisfy(\.coalesced))
        #expect(shared && drained.isEmpty)
        #expect(!machine.isJoinable(7) && machine.flights.isEmpty && machine.waiting.isEmpty)
    }

    @Test func aLoadWithoutAKeyNeverJoins() {
        var machine = Machine()
        guard case .startTask = Self.admit(&machine, 1, key: nil) else {
            Issue.record("must lead")
            return
        }
        guard case .startTask = Self.admit(&machine, 2, key: nil) else {
            Issue.record("must lead too")
            return
        }
        #expect(machine.flights.count == 2)
    }

    @Test func aDuplicateIsRefusedWhenDuplicatesAreRejected() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        guard case .refused(let error) = Self.admit(&machine, 2, key: 7, rejectsDuplicates: true) else {
            Issue.record("must be refused")
            return
        }
        #expect(error.code == .redundantRequest)
        #expect(machine.waiting[2] == nil)
    }

    @Test func aCancelledTaskOrAShutDownTableRefuses() {
        var machine = Machine()
        guard case .refused(let cancelled) = Self.admit(&machine, 1, key: 7, cancelled: true) else {
            Issue.record("a cancelled load must be refused")
            return
        }
        #expect(cancelled.code == .cancelled)
        _ = machine.shutDown(cancelling: false)
        guard case .refused(let shutDown) = Self.admit(&machine, 2, key: 7) else {
            Issue.record("a load after shutdown must be refused")
            return
        }
        #expect(shutDown.code == .shutDown)
        guard case .refused = machine.admitLeader(id: 3, key: 7, cancellation: 3, taskIsCancelled: false) else {
            Issue.record("a leader after shutdown must be refused")
            return
        }
    }

    @Test func aLeaderOnItsOwnTaskWaitsForNothing() {
        var machine = Machine()
        guard case .leads = machine.admitLeader(id: 1, key: 7, cancellation: 1, taskIsCancelled: false) else {
            Issue.record("must lead")
            return
        }
        #expect(machine.waiting.isEmpty && machine.waiterCount == 1)
        guard case .joins = machine.admitLeader(id: 2, key: 7, cancellation: 2, taskIsCancelled: false) else {
            Issue.record("a second leader for the key must be sent to admit")
            return
        }
        guard case .joined = Self.admit(&machine, 2, key: 7, inline: true) else {
            Issue.record("must join")
            return
        }
        #expect(machine.waiterCount == 2)
    }

    @Test func aCancelledLeadersFlightGoesToTheFirstLoadStillWaiting() {
        var machine = Machine()
        _ = machine.admitLeader(id: 1, key: 7, cancellation: 1, taskIsCancelled: false)
        _ = Self.admit(&machine, 2, key: 7, inline: true)
        _ = Self.admit(&machine, 3, key: 7, inline: true)
        _ = machine.leave(2)  // the first joiner left before the leader did
        guard case .handedOver(let next) = machine.land(1, handingOver: true) else {
            Issue.record("must be handed over")
            return
        }
        #expect(next == 3)
        #expect(machine.isJoinable(7) && machine.flights[1]?.cancellation == 3)
        // The new leader lands for good.
        guard case .landed(let first, let others, _, _) = machine.land(1, handingOver: false) else {
            Issue.record("must land")
            return
        }
        #expect(first == nil && others.isEmpty)
        #expect(machine.flights.isEmpty && machine.joinable.isEmpty)
    }

    @Test func aCancelledLeaderWithNobodyWaitingEndsItsFlight() {
        var machine = Machine()
        _ = machine.admitLeader(id: 1, key: 7, cancellation: 1, taskIsCancelled: false)
        guard case .landed = machine.land(1, handingOver: true) else {
            Issue.record("must land")
            return
        }
        #expect(machine.flights.isEmpty && !machine.isJoinable(7))
    }

    @Test func theLastLoadToLeaveCancelsTheTask() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        _ = machine.taskStarted(1, task: 100)
        _ = Self.admit(&machine, 2, key: 7)
        let first = machine.leave(1)
        #expect(first.waiter == 1 && first.cancel == nil)
        #expect(machine.isJoinable(7))
        let last = machine.leave(2)
        #expect(last.waiter == 2 && last.cancel == 100)
        #expect(!machine.isJoinable(7))
        // Its flight stays until its task lands, and answers nobody.
        guard case .landed(let answered, let others, _, _) = machine.land(1, handingOver: false) else {
            Issue.record("must land")
            return
        }
        #expect(answered == nil && others.isEmpty)
    }

    @Test func leavingTwiceOrAfterLandingDoesNothing() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        _ = machine.land(1, handingOver: false)
        let again = machine.leave(1)
        #expect(again.waiter == nil && again.cancel == nil)
    }

    @Test func aTaskCreatedAfterItsFlightWasCancelledIsCancelledAtOnce() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        _ = machine.leave(1)
        let afterLeaving = machine.taskStarted(1, task: 100)
        #expect(afterLeaving)
        var other = Machine()
        _ = Self.admit(&other, 1, key: 7)
        _ = other.shutDown(cancelling: true)
        let afterShutdown = other.taskStarted(1, task: 100)
        #expect(afterShutdown)
    }

    @Test func aCancellingShutdownFailsEveryWaiterAndCancelsEveryTransfer() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        _ = machine.taskStarted(1, task: 100)
        _ = Self.admit(&machine, 2, key: 7)
        _ = machine.admitLeader(id: 3, key: 8, cancellation: 3, taskIsCancelled: false)
        let actions = machine.shutDown(cancelling: true)
        #expect(Set(actions.failed.map(\.waiter)) == [1, 2])
        #expect(actions.tasksToCancel == [100])
        #expect(actions.cancellations == [3])
        #expect(machine.joinable.isEmpty && machine.waiting.isEmpty)
        // A cancelled leader is not handed over after a cancelling shutdown.
        guard case .landed = machine.land(3, handingOver: true) else {
            Issue.record("must land")
            return
        }
    }

    @Test func aDrainWaiterIsAnsweredWhenTheLastFlightLands() {
        var machine = Machine()
        let idle = machine.waitForDrain(1)
        #expect(idle)
        _ = Self.admit(&machine, 1, key: 7)
        _ = Self.admit(&machine, 2, key: 8)
        let busy = machine.waitForDrain(1)
        #expect(!busy)
        guard case .landed(_, _, _, let none) = machine.land(1, handingOver: false) else { return }
        #expect(none.isEmpty)
        guard case .landed(_, _, _, let drained) = machine.land(2, handingOver: false) else { return }
        #expect(drained == [1])
    }

    @Test func aKeyTakenByANewerFlightStaysWithIt() {
        var machine = Machine()
        _ = Self.admit(&machine, 1, key: 7)
        _ = machine.taskStarted(1, task: 100)
        _ = machine.leave(1)  // flight 1 cancelled, no longer joinable
        _ = Self.admit(&machine, 2, key: 7)  // flight 2 takes key 7
        _ = machine.land(1, handingOver: false)
        #expect(machine.joinable[7] == 2)
    }

    // MARK: random sequences

    /// Drives `steps` random events through a machine, checking the invariants after each, then
    /// lands everything and checks that every waiter was resumed exactly once and nothing is
    /// left. Returns the number of events, for a sanity check.
    static func simulate(seed: UInt64, steps: Int) -> Int {
        var random = SeededGenerator(seed: seed)
        var machine = Machine()
        var nextID: UInt64 = 1
        var resumes: [UInt64: Int] = [:]
        var given: Set<UInt64> = []  // waiters handed to the machine or resumed at once
        var pendingStart: [UInt64] = []
        var taskFlights: Set<UInt64> = []
        var inline: [UInt64: UInt64] = [:]  // flight -> the load leading it on its own task
        var joinOrder: [UInt64: [UInt64]] = [:]
        var drainers: Set<Int> = []
        var nextDrainer = 0
        var events = 0

        func resume(_ waiter: UInt64) {
            resumes[waiter, default: 0] += 1
            #expect(resumes[waiter] == 1, "seed \(seed): waiter \(waiter) resumed twice")
        }
        func landed(_ landing: Machine.Landing, serial: UInt64) {
            switch landing {
            case .handedOver(let next):
                resume(next)
                inline[serial] = next
            case .landed(let first, let others, _, let drained):
                if let first { resume(first.waiter) }
                for waiting in others { resume(waiting.waiter) }
                for drainer in drained { #expect(drainers.remove(drainer) != nil, "seed \(seed): unknown drainer") }
                inline[serial] = nil
                taskFlights.remove(serial)
            }
        }
        func check(_ step: String) {
            let violations = machine.invariantViolations()
            #expect(violations.isEmpty, "seed \(seed), after \(step): \(violations)")
        }

        for _ in 0..<steps {
            events += 1
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<35:  // a new load
                let id = nextID
                nextID += 1
                let key: Int? = random.chance(0.1) ? nil : Int.random(in: 0..<4, using: &random)
                // As in a coordinator: whether a load can lead on its own task depends on its
                // request (and so its key), never on who else waits for it.
                let leadsInline = key.map { $0 < 2 } ?? random.chance(0.5)
                let cancelled = random.chance(0.03)
                if leadsInline {
                    switch machine.admitLeader(id: id, key: key, cancellation: id, taskIsCancelled: cancelled) {
                    case .refused:
                        check("a refused leader")
                        continue
                    case .leads:
                        inline[id] = id
                        check("a leader on its task")
                        continue
                    case .joins: break
                    }
                }
                given.insert(id)
                switch Self.admit(
                    &machine, id, key: key, inline: leadsInline, rejectsDuplicates: random.chance(0.1),
                    cancelled: cancelled)
                {
                case .refused: resume(id)
                case .joined:
                    if let key, let serial = machine.joinable[key] { joinOrder[serial, default: []].append(id) }
                case .startTask: pendingStart.append(id)
                case .leadsInline:
                    resume(id)
                    inline[id] = id
                }
                check("a new load")
            case 35..<45:  // a flight's task is created
                guard !pendingStart.isEmpty else { continue }
                let serial = pendingStart.remove(at: Int.random(in: 0..<pendingStart.count, using: &random))
                _ = machine.taskStarted(serial, task: serial)
                taskFlights.insert(serial)
                check("a task started")
            case 45..<65:  // a task's transfer lands
                guard let serial = taskFlights.randomElement(using: &random) else { continue }
                landed(machine.land(serial, handingOver: false), serial: serial)
                check("a task landed")
            case 65..<80:  // a leader on its own task lands, or was cancelled and hands over
                guard let serial = inline.keys.randomElement(using: &random) else { continue }
                let leaderLeft = random.chance(0.4)
                let expectedNext = joinOrder[serial, default: []].first { machine.waiting[$0]?.flight == serial }
                let landing = machine.land(serial, handingOver: leaderLeft)
                if leaderLeft, !machine.cancelsInFlight, let expectedNext {
                    guard case .handedOver(let next) = landing else {
                        Issue.record("seed \(seed): a cancelled leader's flight was not handed over")
                        continue
                    }
                    #expect(next == expectedNext, "seed \(seed): handed to \(next), not the first waiting")
                }
                landed(landing, serial: serial)
                check("a leader landed")
            case 80..<93:  // a waiting load is cancelled
                guard let id = machine.waiting.keys.randomElement(using: &random) else { continue }
                let (waiter, _) = machine.leave(id)
                if let waiter { resume(waiter) }
                check("a load left")
            case 93..<97:  // someone waits for the drain
                nextDrainer += 1
                if !machine.waitForDrain(nextDrainer) { drainers.insert(nextDrainer) }
                check("a drain waiter")
            default:  // shutdown, now and then
                guard random.chance(0.15) else { continue }
                let actions = machine.shutDown(cancelling: random.chance(0.5))
                for waiting in actions.failed { resume(waiting.waiter) }
                check("shutdown")
            }
        }
        // Land everything.
        for serial in pendingStart {
            _ = machine.taskStarted(serial, task: serial)
            taskFlights.insert(serial)
        }
        var rounds = 0
        while !(taskFlights.isEmpty && inline.isEmpty) && rounds < 100_000 {
            rounds += 1
            if let serial = taskFlights.first {
                landed(machine.land(serial, handingOver: false), serial: serial)
            } else if let serial = inline.keys.first {
                landed(machine.land(serial, handingOver: false), serial: serial)
            }
            check("the final landing")
        }
        #expect(machine.flights.isEmpty, "seed \(seed): flights left: \(machine.flights.keys.sorted())")
        #expect(machine.waiting.isEmpty, "seed \(seed): waiters left: \(machine.waiting.keys.sorted())")
        #expect(machine.joinable.isEmpty, "seed \(seed): keys left")
        #expect(drainers.isEmpty, "seed \(seed): drain waiters never answered: \(drainers)")
        let missing = given.filter { resumes[$0] != 1 }
        #expect(missing.isEmpty, "seed \(seed): waiters not resumed exactly once: \(missing.sorted())")
        return events
    }

    @Test(arguments: 0..<4)
    func randomSequencesKeepTheInvariants(batch: UInt64) {
        var events = 0
        for seed in batch * 500..<(batch + 1) * 500 {
            events += Self.simulate(seed: seed, steps: 120)
        }
        #expect(events == 500 * 120)
    }
}
