import CourierCore
import CourierTestServer
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import CourierServices

/// The machine alone, on made-up times.
@Suite struct CircuitBreakerMachineTests {
    typealias Machine = CircuitBreakerMachine

    /// `count` attempts admitted and failed at `now`: the transitions.
    static func fails(_ machine: inout Machine, _ count: Int, at now: Duration) -> [Machine.Transition] {
        (0..<count).map { _ in
            guard case .go(let ticket) = machine.admit(at: now), !ticket.probe else {
                Issue.record("a closed circuit lets attempts through")
                return .none
            }
            return machine.record(.failure, ticket, at: now)
        }
    }

    /// The ticket of an attempt admitted at `now`, which must be a probe.
    static func probe(_ machine: inout Machine, at now: Duration) -> Machine.Ticket? {
        guard case .go(let ticket) = machine.admit(at: now), ticket.probe else { return nil }
        return ticket
    }

    @Test func consecutiveFailuresOpenIt() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 5, coolDown: .seconds(5)))
        let transitions = Self.fails(&machine, 5, at: .seconds(1))
        #expect(transitions == [.none, .none, .none, .none, .opened(coolDown: .seconds(5))])
        #expect(machine.admit(at: .seconds(2)) == .refuse(until: .seconds(6)))
        #expect(machine.admit(at: .milliseconds(5_999)) == .refuse(until: .seconds(6)))
        #expect(machine.refuses(at: .seconds(2), after: .seconds(3)))
        #expect(!machine.refuses(at: .seconds(2), after: .seconds(4)))
    }

    @Test func aSuccessResetsTheRun() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 3, minimumAttempts: 1_000))
        for _ in 0..<10 {
            _ = Self.fails(&machine, 2, at: .seconds(1))
            guard case .go(let ticket) = machine.admit(at: .seconds(1)) else { return }
            #expect(machine.record(.success, ticket, at: .seconds(1)) == .none)
        }
        #expect(machine.state == .closed(consecutive: 0))
    }

    @Test func aFailureRateOpensItOnceThereAreEnoughAttempts() {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 100, failureRate: 0.5, minimumAttempts: 20, window: .seconds(10)))
        var transitions: [Machine.Transition] = []
        let ticket = Machine.Ticket(generation: 0, probe: false)
        for index in 0..<20 {
            transitions.append(
                machine.record(index.isMultiple(of: 2) ? .success : .failure, ticket, at: .seconds(1)))
        }
        // Half failed from the second attempt on, but the rate is judged from the 20th.
        #expect(transitions.dropLast().allSatisfy { $0 == .none })
        #expect(transitions.last == .opened(coolDown: .seconds(5)))
    }

    @Test func theRateForgetsAttemptsThatLeftTheWindow() {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 100, failureRate: 0.5, minimumAttempts: 4, window: .seconds(10)))
        let ticket = Machine.Ticket(generation: 0, probe: false)
        for _ in 0..<3 { _ = machine.record(.failure, ticket, at: .seconds(0)) }
        #expect(machine.record(.success, ticket, at: .seconds(0)) == .none)
        // 11 s later those four are gone: three failures and a success is not enough attempts.
        for _ in 0..<3 { #expect(machine.record(.success, ticket, at: .seconds(11)) == .none) }
        #expect(machine.record(.failure, ticket, at: .seconds(11)) == .none)
        #expect(machine.record(.failure, ticket, at: .seconds(11)) == .none, "2 of 5")
        #expect(machine.record(.failure, ticket, at: .seconds(11)) == .opened(coolDown: .seconds(5)), "3 of 6")
    }

    @Test func aProbeAfterTheCoolDownClosesIt() throws {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5)))
        _ = Self.fails(&machine, 1, at: .zero)
        let probe = try #require(Self.probe(&machine, at: .seconds(5)))
        #expect(machine.admit(at: .seconds(5)) == .refuse(until: nil), "one probe at a time")
        #expect(machine.refuses(at: .seconds(5), after: .zero))
        #expect(machine.record(.success, probe, at: .seconds(6)) == .closed)
        guard case .go(let ticket) = machine.admit(at: .seconds(6)) else { return }
        #expect(!ticket.probe)
        #expect(machine.state == .closed(consecutive: 0))
    }

    @Test func severalProbesMustAllSucceed() throws {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1), probes: 2))
        _ = Self.fails(&machine, 1, at: .zero)
        let first = try #require(Self.probe(&machine, at: .seconds(1)))
        let second = try #require(Self.probe(&machine, at: .seconds(1)))
        #expect(machine.admit(at: .seconds(1)) == .refuse(until: nil))
        #expect(machine.record(.success, first, at: .seconds(1)) == .none)
        #expect(machine.admit(at: .seconds(1)) == .refuse(until: nil), "a success does not free a place")
        #expect(machine.record(.success, second, at: .seconds(1)) == .closed)
    }

    @Test func eachFailedProbeDoublesTheCoolDownUpToItsMaximum() throws {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5), maximumCoolDown: .seconds(30)))
        _ = Self.fails(&machine, 1, at: .zero)
        var now = Duration.zero
        var coolDowns: [Duration] = [.seconds(5)]
        for _ in 0..<4 {
            now += coolDowns.last!
            #expect(
                machine.admit(at: now - .milliseconds(1)) != .go(.init(generation: machine.generation, probe: true)))
            let probe = try #require(Self.probe(&machine, at: now))
            guard case .opened(let coolDown) = machine.record(.failure, probe, at: now) else {
                Issue.record("a failed probe opens the circuit again")
                return
            }
            coolDowns.append(coolDown)
        }
        #expect(coolDowns == [.seconds(5), .seconds(10), .seconds(20), .seconds(30), .seconds(30)])
        // Closing starts over from the first cool-down.
        now += .seconds(30)
        let probe = try #require(Self.probe(&machine, at: now))
        #expect(machine.record(.success, probe, at: now) == .closed)
        #expect(Self.fails(&machine, 1, at: now) == [.opened(coolDown: .seconds(5))])
    }

    @Test func anAbandonedProbeGivesItsPlaceBack() throws {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1)))
        _ = Self.fails(&machine, 1, at: .zero)
        let probe = try #require(Self.probe(&machine, at: .seconds(1)))
        #expect(machine.record(.abandoned, probe, at: .seconds(1)) == .none)
        #expect(Self.probe(&machine, at: .seconds(1)) != nil)
    }

    /// A host that takes connections and never answers holds the probe: past its timeout the
    /// probe counts as failed, the circuit opens again, and a later probe may go.
    @Test func aProbeThatNeverComesBackCountsAsFailed() throws {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1)))
        _ = Self.fails(&machine, 1, at: .zero)
        let lost = try #require(Self.probe(&machine, at: .seconds(1)))
        #expect(machine.admit(at: .seconds(10)) == .refuse(until: nil))
        // 10 s after it went (the probe timeout): open again, for twice the cool-down.
        #expect(machine.admit(at: .seconds(11)) == .refuse(until: .seconds(13)))
        #expect(machine.record(.success, lost, at: .seconds(12)) == .none, "too late to count")
        #expect(Self.probe(&machine, at: .seconds(13)) != nil)
    }

    /// Outcomes of attempts admitted before the circuit last changed change nothing: a failure
    /// sent before an outage that lands after the circuit closed, a probe of an earlier spell.
    @Test func lateOutcomesDoNotMoveTheCircuit() throws {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1), probes: 2))
        guard case .go(let early) = machine.admit(at: .zero) else { return }
        _ = Self.fails(&machine, 1, at: .zero)
        #expect(machine.record(.success, early, at: .milliseconds(10)) == .none)
        let first = try #require(Self.probe(&machine, at: .seconds(1)))
        #expect(machine.record(.failure, early, at: .seconds(1)) == .none)
        #expect(machine.record(.failure, first, at: .seconds(1)) == .opened(coolDown: .seconds(2)))
        let second = try #require(Self.probe(&machine, at: .seconds(3)))
        // The first spell's probe, abandoned late, does not free the second spell's places.
        #expect(machine.record(.abandoned, first, at: .seconds(3)) == .none)
        #expect(machine.record(.success, first, at: .seconds(3)) == .none)
        #expect(machine.state == .halfOpen(probesOut: 1, successes: 0, coolDown: .seconds(2), since: .seconds(3)))
        #expect(machine.record(.success, second, at: .seconds(3)) == .none)
        let third = try #require(Self.probe(&machine, at: .seconds(3)))
        #expect(machine.record(.success, third, at: .seconds(3)) == .closed)
        #expect(machine.record(.failure, early, at: .seconds(4)) == .none)
        #expect(machine.state == .closed(consecutive: 0))
    }

    /// Fields set past `init`'s bounds do not trap.
    @Test func aZeroWindowIsClamped() {
        var breaker = CircuitBreaker(consecutiveFailures: 2)
        breaker.window = .zero
        var machine = Machine(breaker)
        #expect(Self.fails(&machine, 2, at: .seconds(1)).last == .opened(coolDown: .seconds(5)))
        var budget = RetryBudget()
        budget.window = .zero
        var budgetMachine = RetryBudgetMachine(budget)
        budgetMachine.loadSent(at: .seconds(1))
    }

    /// Thousands of random sequences of attempts admitted, and ended in any order, late ones
    /// included: the probes out never pass the limit nor the probes of this spell still out, a
    /// closed circuit refuses nothing, an open one lets nothing but probes through, and every
    /// refusal names a moment still to come.
    @Test(arguments: [1, 2, 3]) func randomSequencesKeepTheInvariants(probes: Int) {
        var random = SeededGenerator(seed: UInt64(probes) * 7_919)
        for _ in 0..<2_000 {
            let breaker = CircuitBreaker(
                consecutiveFailures: Int.random(in: 1...4, using: &random), failureRate: 0.5, minimumAttempts: 6,
                window: .seconds(2), coolDown: .milliseconds(300), maximumCoolDown: .seconds(2), probes: probes)
            var machine = Machine(breaker)
            var now = Duration.zero
            var outstanding: [Machine.Ticket] = []
            for _ in 0..<60 {
                now += .milliseconds(Int.random(in: 0...400, using: &random))
                if outstanding.isEmpty || Bool.random(using: &random) {
                    let before = machine.state
                    switch machine.admit(at: now) {
                    case .go(let ticket):
                        if !ticket.probe, case .closed = before {
                        } else if ticket.probe {
                        } else {
                            Issue.record("passed while \(before)")
                        }
                        #expect(ticket.generation == machine.generation)
                        outstanding.append(ticket)
                    case .refuse(let until):
                        if case .closed = before { Issue.record("refused while closed") }
                        if let until, until <= now { Issue.record("refused until a moment past") }
                    }
                } else {
                    let ticket = outstanding.remove(at: Int.random(in: 0..<outstanding.count, using: &random))
                    let outcomes: [Machine.Outcome] = [.success, .failure, .abandoned]
                    _ = machine.record(outcomes.randomElement(using: &random)!, ticket, at: now)
                }
                if case .halfOpen(let out, let successes, _, _) = machine.state {
                    let current = outstanding.filter { $0.probe && $0.generation == machine.generation }.count
                    #expect(out >= 0 && out + successes <= probes, "\(machine.state)")
                    #expect(out == current, "probes out \(out), of this spell outstanding \(current)")
                }
            }
        }
    }

    /// An event stream whose host's circuit is open waits for the circuit rather than failing.
    @Test func anEventStreamReconnectsOnceTheCircuitLetsAProbeThrough() {
        var machine = EventStreamReconnection(delay: .seconds(1), maximumAttempts: 5)
        var error = ServiceError(.circuitOpen)
        error.retryAfter = .seconds(4)
        guard case .reconnect(let after) = machine.ended(.failed(error)) else {
            Issue.record("an open circuit is waited out")
            return
        }
        #expect(after == .seconds(4))
    }
}
