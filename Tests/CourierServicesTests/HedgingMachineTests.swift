import CourierCore
import Testing

@testable import CourierServices

/// The latency histogram and the hedging machine alone, on made-up times.
@Suite struct HedgeMachineTests {
    @Test func eachBucketBoundsWhatItHoldsWithinAFifth() {
        var previous = -1
        var value: Int64 = 0
        while value < 2_000_000_000 {
            let bucket = LatencyWindow.bucket(microseconds: value)
            #expect(bucket >= previous, "buckets grow with the latency")
            let bound = LatencyWindow.upperBound(ofBucket: bucket)
            #expect(bound >= value, "\(value) µs is within its bucket's bound \(bound)")
            #expect(Double(bound) <= Double(value) * 1.25 + 1, "\(value) µs: bound \(bound) within a fifth")
            previous = bucket
            value = value < 100 ? value + 1 : value + value / 7
        }
        #expect(LatencyWindow.bucket(microseconds: .max) == LatencyWindow.bucketCount - 1)
        #expect(LatencyWindow.bucket(microseconds: -5) == 0)
    }

    @Test func aPercentileDelayWaitsForTwentyAnswers() {
        var machine = HedgeMachine()
        let hedging = Hedging()
        for index in 0..<19 {
            #expect(machine.loadSent(hedging, at: .seconds(1)) == nil, "no estimate after \(index) answers")
            machine.answered(after: .milliseconds(3), at: .seconds(1))
        }
        #expect(machine.loadSent(hedging, at: .seconds(1)) == nil)
        machine.answered(after: .milliseconds(3), at: .seconds(1))
        let delay = machine.loadSent(hedging, at: .seconds(1))
        #expect(delay != nil && delay! >= .milliseconds(3) && delay! <= .microseconds(3_750))
    }

    @Test func theP95FollowsTheAnswers() {
        var machine = HedgeMachine()
        let hedging = Hedging()
        for index in 0..<100 {
            machine.answered(after: index < 95 ? .milliseconds(2) : .milliseconds(200), at: .seconds(1))
        }
        let fast = machine.loadSent(hedging, at: .seconds(1))
        #expect(fast != nil && fast! <= .microseconds(2_500), "95 in 100 answered in 2 ms: \(String(describing: fast))")
        for _ in 0..<10 { machine.answered(after: .milliseconds(200), at: .seconds(2)) }
        let slow = machine.loadSent(hedging, at: .seconds(2))
        #expect(slow != nil && slow! >= .milliseconds(200), "one in eleven took 200 ms")
        let floor = machine.loadSent(Hedging(delay: .percentile(0.5, minimum: .milliseconds(40))), at: .seconds(2))
        #expect(floor == .milliseconds(40), "the minimum holds over a faster median")
    }

    @Test func oldAnswersLeaveTheWindow() {
        var machine = HedgeMachine()
        for _ in 0..<50 { machine.answered(after: .milliseconds(2), at: .seconds(1)) }
        #expect(machine.loadSent(Hedging(), at: .seconds(9)) != nil)
        #expect(machine.loadSent(Hedging(), at: .seconds(12)) == nil, "two generations on, nothing is left")
        let idleSoon = machine.isIdle(at: .seconds(12))
        #expect(!idleSoon, "the loads still count")
        let idleLater = machine.isIdle(at: .seconds(30))
        #expect(idleLater)
    }

    @Test func hedgesStayWithinTheirShare() {
        var machine = HedgeMachine()
        let hedging = Hedging(delay: .fixed(.milliseconds(10)), maximumShare: 0.05)
        for _ in 0..<100 { #expect(machine.loadSent(hedging, at: .seconds(1)) == .milliseconds(10)) }
        var sent = 0
        while machine.hasRoom(hedging, at: .seconds(1)) {
            machine.hedgeSent(at: .seconds(1))
            sent += 1
        }
        #expect(sent == 5, "5% of 100 loads")
        let roomLater = machine.hasRoom(hedging, at: .seconds(12))
        #expect(!roomLater, "no loads, no room")
        #expect(machine.loadSent(.never, at: .seconds(1)) == nil, "never hedges")
    }
}

/// The race alone: each order in which its sides can end.
@Suite struct HedgeRaceTests {
    @Test func aDecisiveFirstAnswerWinsAndNoHedgeGoesAfterIt() {
        var race = HedgeRace()
        #expect(race.ended(.first, decisive: true) == .take)
        #expect(race.hedgeWakes() == false, "a decided race sends no hedge")
        #expect(race.hedgeNotSent() == .ignore)
    }

    @Test func aRetryableFailureBeforeTheDelayWinsAtOnce() {
        var race = HedgeRace()
        #expect(race.ended(.first, decisive: false) == .take, "no hedge is out: the retry policy takes over")
        #expect(race.hedgeWakes() == false)
    }

    @Test func aRetryableFailureWaitsForAHedgeThatWent() {
        var race = HedgeRace()
        #expect(race.hedgeWakes() == true)
        #expect(race.ended(.first, decisive: false) == .hold)
        #expect(race.ended(.hedge, decisive: true) == .take)
    }

    @Test func twoFailuresEndWithTheLast() {
        var race = HedgeRace()
        #expect(race.hedgeWakes() == true)
        #expect(race.ended(.hedge, decisive: false) == .hold)
        #expect(race.ended(.first, decisive: false) == .take)
    }

    @Test func aHedgeRefusedAfterWakingReleasesTheHeldFailure() {
        var race = HedgeRace()
        #expect(race.hedgeWakes() == true)
        #expect(race.ended(.first, decisive: false) == .hold)
        #expect(race.hedgeNotSent() == .takeHeld)
    }

    @Test func aHedgeRefusedEarlyLeavesTheRaceToTheFirst() {
        var race = HedgeRace()
        #expect(race.hedgeWakes() == true)
        #expect(race.hedgeNotSent() == .ignore)
        #expect(race.ended(.first, decisive: false) == .take)
    }

    @Test func theLoserIsIgnored() {
        var race = HedgeRace()
        #expect(race.hedgeWakes() == true)
        #expect(race.ended(.hedge, decisive: true) == .take)
        #expect(race.ended(.first, decisive: true) == .ignore)
    }
}
