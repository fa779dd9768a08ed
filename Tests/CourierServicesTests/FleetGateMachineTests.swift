import CourierTestServer
import Testing

@testable import CourierServices

/// ``FleetGateMachine`` on its own: each transition, then thousands of seeded random event
/// sequences with the invariants checked after every step (one leader per key, every waiting
/// load answered exactly once and with its leader's decision, nothing left once every leader
/// has decided and given its lease back). No task, no lock, no store.
@Suite("Fleet gate machine: one lease per key in a process")
struct FleetGateMachineTests {
    typealias Machine = FleetGateMachine<String, Int>

    /// Hands a mutating call's result to `#expect`, which cannot take the call itself.
    static func take<T>(_ value: T) -> T { value }

    @Test func theFirstLoadOfAKeyLeadsAndTheNextWait() {
        var machine = Machine()
        #expect(Self.take(machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)) == .now(.lead))
        #expect(Self.take(machine.enter("k", id: 2, follower: 2, taskIsCancelled: false)) == .waits)
        #expect(Self.take(machine.enter("other", id: 3, follower: 3, taskIsCancelled: false)) == .now(.lead))
        #expect(machine.followerCount == 1)
    }

    @Test func aLeaderThatTakesTheLeaseSendsItsFollowersAndLaterLoadsToFetch() {
        var machine = Machine()
        _ = machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)
        _ = machine.enter("k", id: 2, follower: 2, taskIsCancelled: false)
        _ = machine.enter("k", id: 3, follower: 3, taskIsCancelled: false)
        let decided = machine.decide("k", holdsLease: true, found: false)
        #expect(Set(decided.followers) == [2, 3])
        #expect(decided.turn == .fetch)
        #expect(Self.take(machine.enter("k", id: 4, follower: 4, taskIsCancelled: false)) == .now(.fetch))
        machine.leave("k")
        #expect(Self.take(machine.enter("k", id: 5, follower: 5, taskIsCancelled: false)) == .now(.lead))
    }

    @Test func aLeaderThatFoundTheEntrySendsItsFollowersToLookItUpAndFreesTheKey() {
        var machine = Machine()
        _ = machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)
        _ = machine.enter("k", id: 2, follower: 2, taskIsCancelled: false)
        let decided = machine.decide("k", holdsLease: false, found: true)
        #expect(decided.followers == [2])
        #expect(decided.turn == .lookUp)
        #expect(machine.isIdle)
        #expect(machine.followerCount == 0)
    }

    @Test func aLeaderThatFetchesWithoutALeaseFreesTheKey() {
        var machine = Machine()
        _ = machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)
        _ = machine.enter("k", id: 2, follower: 2, taskIsCancelled: false)
        let decided = machine.decide("k", holdsLease: false, found: false)
        #expect(decided.followers == [2])
        #expect(decided.turn == .fetch)
        #expect(machine.isIdle)
        machine.leave("k")  // a leave without a lease changes nothing
        #expect(machine.isIdle)
    }

    @Test func aCancelledFollowerIsAnsweredOnceAndNotAgainByTheDecision() {
        var machine = Machine()
        _ = machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)
        _ = machine.enter("k", id: 2, follower: 2, taskIsCancelled: false)
        _ = machine.enter("k", id: 3, follower: 3, taskIsCancelled: false)
        #expect(Self.take(machine.withdraw("k", id: 2)) == 2)
        #expect(Self.take(machine.withdraw("k", id: 2)) == nil)
        #expect(machine.followerCount == 1)
        #expect(machine.decide("k", holdsLease: false, found: false).followers == [3])
        #expect(Self.take(machine.withdraw("k", id: 3)) == nil)  // a cancellation after its answer
    }

    @Test func aLoadAlreadyCancelledFetchesAtOnceInsteadOfWaiting() {
        var machine = Machine()
        _ = machine.enter("k", id: 1, follower: 1, taskIsCancelled: false)
        #expect(Self.take(machine.enter("k", id: 2, follower: 2, taskIsCancelled: true)) == .now(.fetch))
        #expect(machine.followerCount == 0)
        // A cancelled first load still leads: the leader always decides, cancelled or not.
        #expect(Self.take(machine.enter("j", id: 3, follower: 3, taskIsCancelled: true)) == .now(.lead))
    }

    // MARK: random sequences

    static func simulate(seed: UInt64, steps: Int) {
        var random = SeededGenerator(seed: seed)
        var machine = Machine()
        let keys = ["a", "b"]
        enum Model {
            case deciding(leader: Int, waiting: Set<Int>)
            case holding(leader: Int)
        }
        var model: [String: Model] = [:]
        var answers: [Int: [FleetGate.Turn]] = [:]
        var issued = 0

        func answer(_ load: Int, _ turn: FleetGate.Turn) {
            answers[load, default: []].append(turn)
            #expect(answers[load]?.count == 1, "seed \(seed): load \(load) answered twice")
        }
        func check(_ step: String) {
            let violations = machine.invariantViolations()
            #expect(violations.isEmpty, "seed \(seed), after \(step): \(violations)")
            for key in keys {
                switch (model[key], machine.phases[key]) {
                case (nil, nil), (.holding, .holding?): break
                case (.deciding(_, let waiting), .deciding(let followers)?):
                    #expect(Set(followers.keys.map { Int($0) }) == waiting, "seed \(seed), \(key): followers differ")
                default:
                    Issue.record("seed \(seed), after \(step): \(key) is \(String(describing: machine.phases[key]))")
                }
            }
        }
        func decide(_ key: String, holdsLease: Bool, found: Bool) {
            guard case .deciding(let leader, let waiting) = model[key] else { return }
            let decided = machine.decide(key, holdsLease: holdsLease, found: found)
            #expect(Set(decided.followers) == waiting, "seed \(seed): the decision missed a follower")
            #expect(decided.turn == (found ? .lookUp : .fetch))
            for follower in decided.followers { answer(follower, decided.turn) }
            model[key] = holdsLease ? .holding(leader: leader) : nil
        }

        for _ in 0..<steps {
            let key = keys.randomElement(using: &random)!
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
                issued += 1
                let load = issued
                let cancelled = random.chance(0.05)
                switch machine.enter(key, id: UInt64(load), follower: load, taskIsCancelled: cancelled) {
                case .now(let turn):
                    answer(load, turn)
                    switch model[key] {
                    case nil:
                        #expect(turn == .lead, "seed \(seed): the first load of \(key) did not lead")
                        model[key] = .deciding(leader: load, waiting: [])
                    case .holding: #expect(turn == .fetch)
                    case .deciding:
                        #expect(cancelled && turn == .fetch, "seed \(seed): a load did not wait for the decision")
                    }
                case .waits:
                    #expect(!cancelled, "seed \(seed): a cancelled load waits")
                    guard case .deciding(let leader, var waiting) = model[key] else {
                        Issue.record("seed \(seed): a load waits with no leader deciding")
                        continue
                    }
                    waiting.insert(load)
                    model[key] = .deciding(leader: leader, waiting: waiting)
                }
                check("enter")
            case 45..<60:
                guard case .deciding(let leader, var waiting) = model[key],
                    let load = waiting.randomElement(using: &random)
                else { continue }
                let withdrawn = machine.withdraw(key, id: UInt64(load))
                #expect(withdrawn == load, "seed \(seed): withdrew the wrong load")
                if let withdrawn { answer(withdrawn, .fetch) }
                waiting.remove(load)
                model[key] = .deciding(leader: leader, waiting: waiting)
                check("withdraw")
            case 60..<85:
                decide(key, holdsLease: random.chance(0.5), found: random.chance(0.5))
                check("decide")
            default:
                guard case .holding = model[key] else { continue }
                machine.leave(key)
                model[key] = nil
                check("leave")
            }
        }
        // Drain: every leader decides and gives its lease back.
        for key in keys {
            decide(key, holdsLease: false, found: false)
            if case .holding = model[key] {
                machine.leave(key)
                model[key] = nil
            }
        }
        check("the drain")
        #expect(machine.isIdle, "seed \(seed): keys left")
        #expect(machine.followerCount == 0)
        let unanswered = (0..<issued).map { $0 + 1 }.filter { answers[$0]?.count != 1 }
        #expect(unanswered.isEmpty, "seed \(seed): loads not answered exactly once: \(unanswered)")
    }

    @Test(arguments: 0..<4)
    func randomSequencesKeepTheInvariants(batch: UInt64) {
        for seed in batch * 500..<(batch + 1) * 500 { Self.simulate(seed: seed, steps: 100) }
    }
}
