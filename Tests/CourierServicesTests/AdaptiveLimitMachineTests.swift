import CourierCore
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

/// The adaptive limit alone, on made-up times.
@Suite struct AdaptiveLimitMachineTests {
    typealias Machine = AdaptiveLimitMachine

    /// `count` attempts sent, all in flight: the in-flight count each was sent with.
    @discardableResult
    static func send(_ machine: inout Machine, _ count: Int) -> [Int] {
        (0..<count).map { _ in machine.sent() }
    }

    /// Round trips of a host that answers well: the limit's worth of attempts out, all back
    /// 10 ms later. Returns the limit after each.
    static func roundTrips(_ machine: inout Machine, _ count: Int, from start: Duration) -> [Int] {
        var now = start
        return (0..<count).map { _ in
            for inFlight in Self.send(&machine, machine.wholeLimit) {
                _ = machine.cameBack(.timed, sentAt: now, inFlightThen: inFlight, at: now + .milliseconds(10))
            }
            now += .milliseconds(10)
            return machine.wholeLimit
        }
    }

    /// Until the first cut, each good attempt sent with half the limit in flight adds one.
    @Test func slowStartNearlyDoublesTheLimitPerRoundTrip() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 4), ceiling: 256)
        #expect(Self.roundTrips(&machine, 3, from: .zero) == [7, 11, 17])
        #expect(machine.slowStart && machine.inFlight == 0)
    }

    /// After a cut, each such attempt adds 1/limit: about one more every one or two round
    /// trips, never more than one per round trip.
    @Test func afterACutMoreRoomComesSlowly() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 4), ceiling: 256)
        machine.sent()
        #expect(machine.cameBack(.overloaded, sentAt: .zero, inFlightThen: 1, at: .milliseconds(5)) == 3)
        #expect(!machine.slowStart, "a cut ends slow start")
        let limits = Self.roundTrips(&machine, 8, from: .milliseconds(10))
        #expect(limits == [4, 4, 5, 5, 6, 6, 7, 7])
        #expect(machine.inFlight == 0)
    }

    @Test func aHostUsedBelowHalfItsLimitKeepsIt() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 16), ceiling: 256)
        for step in 0..<100 {
            let inFlight = machine.sent()
            let sent = Duration.milliseconds(step * 10)
            #expect(
                machine.cameBack(.timed, sentAt: sent, inFlightThen: inFlight, at: sent + .milliseconds(5)) == nil)
        }
        #expect(machine.wholeLimit == 16)
    }

    /// An overloaded host cuts the limit by the backoff, once per round trip: the attempts sent
    /// before the cut, coming back failed too, do not cut it again.
    @Test func overloadCutsOncePerRoundTrip() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 10, backoff: 0.9), ceiling: 256)
        Self.send(&machine, 10)
        #expect(machine.cameBack(.overloaded, sentAt: .zero, inFlightThen: 1, at: .milliseconds(50)) == 9)
        for _ in 0..<9 {
            #expect(machine.cameBack(.overloaded, sentAt: .zero, inFlightThen: 1, at: .milliseconds(60)) == nil)
        }
        machine.sent()
        // Sent after the cut: 9 × 0.9 = 8.1.
        #expect(machine.cameBack(.overloaded, sentAt: .milliseconds(70), inFlightThen: 1, at: .milliseconds(90)) == 8)
    }

    /// An attempt much slower than the fastest recent one is a sign of overload too; a little
    /// slower is not.
    @Test func aSlowAnswerCutsTheLimit() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 10, latencyTolerance: 2), ceiling: 256)
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .milliseconds(10))
        machine.sent()
        let tolerated = machine.cameBack(.timed, sentAt: .milliseconds(20), inFlightThen: 1, at: .milliseconds(39))
        #expect(tolerated == nil, "1.9x")
        machine.sent()
        let cut = machine.cameBack(.timed, sentAt: .milliseconds(40), inFlightThen: 1, at: .milliseconds(71))
        #expect(cut == 9, "3.1x")
    }

    /// A 1 ms excess at least: a loopback's 100 µs answers jitter by more than 1.5 times.
    @Test func jitterOnAFastHostIsNotOverload() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 10), ceiling: 256)
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .microseconds(100))
        machine.sent()
        #expect(machine.cameBack(.timed, sentAt: .milliseconds(1), inFlightThen: 1, at: .microseconds(2_000)) == nil)
        machine.sent()
        let cut = machine.cameBack(.timed, sentAt: .milliseconds(3), inFlightThen: 1, at: .microseconds(4_200))
        #expect(cut == 9, "1.2 ms is over the baseline and its 1 ms of jitter")
    }

    @Test func theLimitStaysBetweenItsFloorAndTheCeiling() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 4, minimumLimit: 2, backoff: 0.5), ceiling: 5)
        var now = Duration.zero
        for _ in 0..<10 {
            machine.sent()
            now += .seconds(1)
            _ = machine.cameBack(.overloaded, sentAt: now, inFlightThen: 1, at: now + .milliseconds(1))
        }
        #expect(machine.wholeLimit == 2)
        for _ in 0..<200 {
            for inFlight in Self.send(&machine, 5) {
                _ = machine.cameBack(.timed, sentAt: now, inFlightThen: inFlight, at: now + .milliseconds(1))
            }
        }
        #expect(machine.wholeLimit == 5)
    }

    /// Answers whose time measures something else (a 304, a new connection) never cut the
    /// limit for being slow, nor set the baseline.
    @Test func onlyTimedAnswersAreJudgedByTheirTime() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 10), ceiling: 256)
        machine.sent()
        #expect(machine.cameBack(.answered, sentAt: .zero, inFlightThen: 1, at: .microseconds(100)) == nil)
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .milliseconds(10))
        machine.sent()
        #expect(machine.cameBack(.answered, sentAt: .zero, inFlightThen: 1, at: .milliseconds(500)) == nil)
        machine.sent()
        #expect(
            machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .milliseconds(14)) == nil, "under 1.5x 10 ms")
    }

    /// Only attempts sent under little load (the initial limit or fewer in flight) set the
    /// baseline: a busy host's queueing never becomes its unloaded time.
    @Test func theBaselineComesFromAttemptsSentUnderLittleLoad() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 4, latencyWindow: .seconds(1)), ceiling: 256)
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .milliseconds(10))
        // Seconds later, answers of 14 ms with 8 in flight: the 10 ms baseline still holds.
        for step in 1...5 {
            machine.sent()
            let sent = Duration.seconds(step)
            _ = machine.cameBack(.timed, sentAt: sent, inFlightThen: 8, at: sent + .milliseconds(14))
        }
        machine.sent()
        let cut = machine.cameBack(.timed, sentAt: .seconds(6), inFlightThen: 8, at: .seconds(6) + .milliseconds(18))
        #expect(cut != nil, "18 ms is over 1.5 times the 10 ms baseline (not over 1.5 times 14 ms)")
    }

    /// A first answer slowed by something else (a cold start) does not stay the baseline: any
    /// faster answer lowers it, under load too.
    @Test func aFasterAnswerLowersTheBaselineUnderLoad() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 4), ceiling: 256)
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .zero, inFlightThen: 1, at: .milliseconds(100))
        machine.sent()
        _ = machine.cameBack(.timed, sentAt: .milliseconds(200), inFlightThen: 8, at: .milliseconds(210))
        machine.sent()
        let cut = machine.cameBack(.timed, sentAt: .milliseconds(300), inFlightThen: 8, at: .milliseconds(330))
        #expect(cut != nil, "30 ms is over 1.5 times the 10 ms answer, however slow the first")
    }

    @Test func aFloorOverTheCeilingIsTheCeiling() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 8, minimumLimit: 8), ceiling: 4)
        machine.sent()
        _ = machine.cameBack(.overloaded, sentAt: .zero, inFlightThen: 1, at: .milliseconds(1))
        #expect(machine.wholeLimit <= 4)
    }

    @Test func ignoredOutcomesMoveNothing() {
        var machine = Machine(AdaptiveConcurrency(initialLimit: 8), ceiling: 256)
        Self.send(&machine, 8)
        for _ in 0..<8 { #expect(machine.cameBack(.ignored, sentAt: .zero, inFlightThen: 1, at: .seconds(5)) == nil) }
        #expect(machine.wholeLimit == 8 && machine.inFlight == 0 && machine.isIdle)
    }
}

/// The host queue with a limit of its own per host.
@Suite struct HostQueueLimitTests {
    typealias Machine = HostQueueMachine<String, Int>

    static func take<T>(_ value: T) -> T { value }

    @Test func aRaisedLimitLetsWaitersIn() {
        var machine = Machine()
        machine.initialLineLimit = 1
        #expect(Self.take(machine.enterIfRoom("a", limit: 256)))
        let waiting = (1...3).map {
            machine.queue($0, for: "a", limit: 256, taskIsCancelled: false, deadlinePassed: false)
        }
        #expect(waiting.allSatisfy { if case .waits = $0 { true } else { false } })
        let admitted = machine.setLimit("a", to: 3)
        #expect(admitted == [1, 2])
        #expect(machine.lines["a"]?.running == 3)
        #expect(machine.invariantViolations(limit: 256).isEmpty)
    }

    @Test func overALoweredLimitAPlaceGoesRatherThanToAWaiter() {
        var machine = Machine()
        machine.initialLineLimit = 3
        for _ in 0..<3 { #expect(Self.take(machine.enterIfRoom("a", limit: 256))) }
        _ = machine.queue(1, for: "a", limit: 256, taskIsCancelled: false, deadlinePassed: false)
        let admitted = machine.setLimit("a", to: 2)
        #expect(admitted.isEmpty)
        let first = machine.leave("a")
        #expect(first == nil, "3 running over a limit of 2: the place goes")
        let second = machine.leave("a")
        #expect(second == 1, "2 running: the waiter takes the place")
        #expect(machine.lines["a"]?.running == 2)
    }
}
