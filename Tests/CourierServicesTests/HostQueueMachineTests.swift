import CourierTestServer
import Testing

@testable import CourierServices

/// ``HostQueueMachine`` on its own: each transition, then thousands of seeded random event
/// sequences with the invariants checked after every step (the limit never exceeded, FIFO per
/// host, every waiter answered exactly once, nothing left after a drain). No task, no lock, no
/// clock.
@Suite("Host queue machine: turns per host, in order")
struct HostQueueMachineTests {
    typealias Machine = HostQueueMachine<String, Int>

    /// Hands a mutating call's result to `#expect`, which cannot take the call itself.
    static func take<T>(_ value: T) -> T { value }

    static func waits(_ queued: Machine.Queued) -> UInt64? {
        if case .waits(let ticket) = queued { return ticket }
        return nil
    }

    @Test func placesAreTakenUpToTheLimitThenLoadsWait() {
        var machine = Machine()
        #expect(Self.take(machine.enterIfRoom("a", limit: 2)))
        #expect(Self.take(machine.enterIfRoom("a", limit: 2)))
        #expect(!Self.take(machine.enterIfRoom("a", limit: 2)))
        #expect(Self.take(machine.enterIfRoom("b", limit: 2)))  // another host has its own places
        let ticket = Self.waits(machine.queue(1, for: "a", limit: 2, taskIsCancelled: false, deadlinePassed: false))
        #expect(ticket != nil)
        #expect(machine.waiterCount == 1)
    }

    @Test func aLoadQueuedWhileAPlaceIsFreeTakesItAtOnce() {
        var machine = Machine()
        #expect(
            Self.take(machine.queue(1, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false)) == .admitted)
        #expect(machine.lines["a"]?.running == 1)
    }

    @Test func aGivenBackPlaceGoesToTheOldestWaiter() {
        var machine = Machine()
        _ = machine.enterIfRoom("a", limit: 1)
        for waiter in 1...3 {
            _ = machine.queue(waiter, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false)
        }
        #expect(Self.take(machine.leave("a")) == 1)
        #expect(Self.take(machine.leave("a")) == 2)
        #expect(Self.take(machine.leave("a")) == 3)
        #expect(Self.take(machine.leave("a")) == nil)
        #expect(machine.lines["a"]?.running == 0)
        #expect(machine.isIdle)
    }

    @Test func aWithdrawnWaiterIsSkipped() {
        var machine = Machine()
        _ = machine.enterIfRoom("a", limit: 1)
        let first = Self.waits(machine.queue(1, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false))!
        _ = machine.queue(2, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false)
        #expect(Self.take(machine.withdraw("a", ticket: first)) == 1)
        #expect(Self.take(machine.withdraw("a", ticket: first)) == nil)  // a late timer finds no one
        #expect(Self.take(machine.leave("a")) == 2)
    }

    @Test func refusalsComeBeforeAnyPlace() {
        var machine = Machine()
        #expect(
            Self.take(machine.queue(1, for: "a", limit: 1, taskIsCancelled: true, deadlinePassed: false))
                == .refused(.cancelled))
        #expect(
            Self.take(machine.queue(2, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: true))
                == .refused(.timedOut))
        #expect(machine.isIdle)
        _ = machine.enterIfRoom("a", limit: 1)
        _ = machine.queue(3, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false)
        #expect(Self.take(machine.shutDown()) == [3])
        #expect(
            Self.take(machine.queue(4, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false))
                == .refused(.shutDown))
    }

    @Test func idleLinesAreDroppedOnceThereAreMany() {
        var machine = Machine()
        for host in 0..<64 {
            _ = machine.enterIfRoom("h\(host)", limit: 1)
            _ = machine.leave("h\(host)")
        }
        #expect(machine.lines.count == 64)
        _ = machine.enterIfRoom("busy", limit: 1)
        #expect(machine.lines.count == 1)
    }

    @Test func manyWithdrawnTicketsDoNotPileUp() {
        var machine = Machine()
        _ = machine.enterIfRoom("a", limit: 1)
        var tickets: [UInt64] = []
        for waiter in 0..<3_000 {
            tickets.append(
                Self.waits(machine.queue(waiter, for: "a", limit: 1, taskIsCancelled: false, deadlinePassed: false))!)
        }
        for ticket in tickets.dropLast() { _ = machine.withdraw("a", ticket: ticket) }
        let line = machine.lines["a"]!
        #expect(line.order.count - line.head < 2_048)
        #expect(Self.take(machine.leave("a")) == 2_999)
    }

    // MARK: random sequences

    static func simulate(seed: UInt64, steps: Int) {
        var random = SeededGenerator(seed: seed)
        var machine = Machine()
        let limit = Int.random(in: 1...3, using: &random)
        let hosts = ["a", "b", "c"]
        var holding: [String: Int] = [:]  // places held, per host, as the loads see them
        var waiting: [String: [(waiter: Int, ticket: UInt64)]] = [:]  // in arrival order
        var answered: [Int: Int] = [:]
        var issued = 0

        func answer(_ waiter: Int) {
            answered[waiter, default: 0] += 1
            #expect(answered[waiter] == 1, "seed \(seed): waiter \(waiter) answered twice")
        }
        /// A holder gives its place back: to the oldest still waiting (FIFO), or to nobody.
        func leave(_ host: String) {
            if let next = machine.leave(host) {
                #expect(next == waiting[host]?.first?.waiter, "seed \(seed): \(next) served out of order")
                waiting[host]?.removeFirst()
                answer(next)
            } else {
                holding[host, default: 0] -= 1
            }
        }
        func check(_ step: String) {
            let violations = machine.invariantViolations(limit: limit)
            #expect(violations.isEmpty, "seed \(seed), after \(step): \(violations)")
            for host in hosts {
                #expect((holding[host] ?? 0) <= limit, "seed \(seed): \(host) over its limit")
                #expect((machine.lines[host]?.running ?? 0) == (holding[host] ?? 0), "seed \(seed): \(host) miscounted")
            }
        }

        for _ in 0..<steps {
            let host = hosts.randomElement(using: &random)!
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30:
                if machine.enterIfRoom(host, limit: limit) { holding[host, default: 0] += 1 }
                check("enterIfRoom")
            case 30..<60:
                issued += 1
                let waiter = issued
                let queued = machine.queue(
                    waiter, for: host, limit: limit, taskIsCancelled: random.chance(0.05),
                    deadlinePassed: random.chance(0.05))
                switch queued {
                case .admitted:
                    answer(waiter)
                    holding[host, default: 0] += 1
                case .refused: answer(waiter)
                case .waits(let ticket): waiting[host, default: []].append((waiter, ticket))
                }
                check("queue")
            case 60..<85:
                guard (holding[host] ?? 0) > 0 else { continue }
                leave(host)
                check("leave")
            case 85..<97:
                guard let line = waiting[host], !line.isEmpty else { continue }
                let index = Int.random(in: 0..<line.count, using: &random)
                let withdrawn = machine.withdraw(host, ticket: line[index].ticket)
                #expect(withdrawn == line[index].waiter, "seed \(seed): withdrew the wrong waiter")
                if let withdrawn { answer(withdrawn) }
                waiting[host]?.remove(at: index)
                check("withdraw")
            default:
                guard random.chance(0.1) else { continue }
                for waiter in machine.shutDown() { answer(waiter) }
                waiting = [:]
                check("shutdown")
            }
        }
        // Drain: every holder gives its place back, every place passes down its line.
        for host in hosts {
            while (holding[host] ?? 0) > 0 { leave(host) }
        }
        check("the drain")
        #expect(machine.isIdle, "seed \(seed): places or waiters left")
        let unanswered = (1...max(issued, 1)).filter { issued > 0 && answered[$0] != 1 }
        #expect(unanswered.isEmpty, "seed \(seed): waiters not answered exactly once: \(unanswered)")
    }

    @Test(arguments: 0..<4)
    func randomSequencesKeepTheInvariants(batch: UInt64) {
        for seed in batch * 500..<(batch + 1) * 500 { Self.simulate(seed: seed, steps: 100) }
    }
}
