import Testing

@testable import CourierTransport

/// ``IdleWatch`` on its own, on made-up times (nanoseconds): when a transfer counts as idle.
@Suite("Idle watch: the idle limit's decisions")
struct IdleWatchTests {
    static let ms: Int64 = 1_000_000
    static let connected = IdleWatch.Observation(connectedAfter: 5 * ms, unacknowledgedBytes: 0)

    @Test func aTransferWithNoActivityExpiresAtTheLimitAfterConnecting() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: false)
        #expect(watch.nextCheck == 1_000 * Self.ms)
        // Connected after 5 ms: the limit counts from there, so not yet at 1,000 ms.
        #expect(watch.check(now: 1_000 * Self.ms, observation: Self.connected) == .checkAt(1_005 * Self.ms))
        #expect(watch.check(now: 1_005 * Self.ms, observation: Self.connected) == .expired)
    }

    @Test func activityMovesTheCheck() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: false)
        watch.touch(at: 700 * Self.ms)
        #expect(watch.check(now: 1_000 * Self.ms, observation: Self.connected) == .checkAt(1_700 * Self.ms))
        #expect(watch.check(now: 1_699 * Self.ms, observation: Self.connected) == .checkAt(1_700 * Self.ms))
        #expect(watch.check(now: 1_700 * Self.ms, observation: Self.connected) == .expired)
    }

    @Test func anEarlierStampNeverMovesTheClockBack() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: false)
        watch.touch(at: 800 * Self.ms)
        watch.touch(at: 300 * Self.ms)
        #expect(watch.lastActivity == 800 * Self.ms)
    }

    @Test func connectingIsNotIdle() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: false)
        let connecting = IdleWatch.Observation(connectedAfter: nil, unacknowledgedBytes: nil)
        // Still connecting at 1 s and 1.25 s: checked every quarter of the limit.
        #expect(watch.check(now: 1_000 * Self.ms, observation: connecting) == .checkAt(1_250 * Self.ms))
        #expect(watch.check(now: 1_250 * Self.ms, observation: connecting) == .checkAt(1_500 * Self.ms))
        // Connected at 1.4 s: idle from there, so expired at 2.4 s, not before.
        let late = IdleWatch.Observation(connectedAfter: 1_400 * Self.ms, unacknowledgedBytes: 0)
        #expect(watch.check(now: 1_500 * Self.ms, observation: late) == .checkAt(2_400 * Self.ms))
        #expect(watch.check(now: 2_399 * Self.ms, observation: late) == .checkAt(2_400 * Self.ms))
        #expect(watch.check(now: 2_400 * Self.ms, observation: late) == .expired)
    }

    @Test func aPausedTransferIsNotIdle() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: false)
        var paused = Self.connected
        paused.isPaused = true
        #expect(watch.check(now: 5_000 * Self.ms, observation: paused) == .checkAt(6_000 * Self.ms))
        #expect(watch.check(now: 6_000 * Self.ms, observation: Self.connected) == .expired)
    }

    @Test func aBodyIsSampledEveryQuarterOfTheLimit() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: true)
        #expect(watch.nextCheck == 250 * Self.ms)
        func queued(_ bytes: Int) -> IdleWatch.Observation {
            IdleWatch.Observation(connectedAfter: 1 * Self.ms, unacknowledgedBytes: bytes)
        }
        // The read callback stamped at 10 ms; the send queue drains while curl has nothing to do.
        watch.touch(at: 10 * Self.ms)
        #expect(watch.check(now: 250 * Self.ms, observation: queued(900_000)) == .checkAt(500 * Self.ms))
        #expect(watch.check(now: 500 * Self.ms, observation: queued(600_000)) == .checkAt(750 * Self.ms))
        #expect(watch.check(now: 750 * Self.ms, observation: queued(300_000)) == .checkAt(1_000 * Self.ms))
        // Stuck at 300,000 from 750 ms on: idle since then (at most a quarter late).
        #expect(watch.check(now: 1_000 * Self.ms, observation: queued(300_000)) == .checkAt(1_250 * Self.ms))
        #expect(watch.check(now: 1_250 * Self.ms, observation: queued(300_000)) == .checkAt(1_500 * Self.ms))
        #expect(watch.check(now: 1_500 * Self.ms, observation: queued(300_000)) == .checkAt(1_750 * Self.ms))
        #expect(watch.check(now: 1_750 * Self.ms, observation: queued(300_000)) == .expired)
    }

    @Test func anUnknownQueueCountsAsNoActivity() {
        var watch = IdleWatch(limit: .seconds(1), started: 0, sendsBody: true)
        let unknown = IdleWatch.Observation(connectedAfter: 1 * Self.ms, unacknowledgedBytes: nil)
        var now: Int64 = 0
        var verdict = IdleWatch.Verdict.checkAt(watch.nextCheck)
        while case .checkAt(let next) = verdict {
            now = next
            verdict = watch.check(now: now, observation: unknown)
        }
        // Connected at 1 ms: expired at 1,001 ms, the first check at or past the limit.
        #expect(now == 1_001 * Self.ms)
    }

    @Test func limitsAreKeptSane() {
        #expect(IdleWatch(limit: .zero, started: 0, sendsBody: false).limit == Self.ms)
        #expect(IdleWatch(limit: .milliseconds(-5), started: 0, sendsBody: false).limit == Self.ms)
        #expect(IdleWatch(limit: .milliseconds(1_500), started: 0, sendsBody: false).limit == 1_500 * Self.ms)
        #expect(IdleWatch(limit: .seconds(Int64.max), started: 0, sendsBody: false).limit == Int64.max / 4)
    }
}
