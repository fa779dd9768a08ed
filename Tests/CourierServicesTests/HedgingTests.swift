import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Hedged loads under a coordinator: through a mock first, for each rule, then through curl.
@Suite struct HedgingLoadTests {
    struct Item: Resource {
        typealias Response = Data
        var method: HTTPRequest.Method = .get
        var hedging: Hedging? = Hedging(delay: .fixed(.milliseconds(20)), maximumShare: 1)
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/item") }
    }

    static func configuration() -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        return configuration
    }

    /// A mock whose `n`th request (from 1) answers as `reply(n)` says, after its delay, and
    /// which counts the requests cancelled before they answered.
    static func mock(
        _ reply: @escaping @Sendable (Int) -> (delay: Duration, status: Int)
    ) -> (MockTransport, LockedValue<(sent: Int, cancelled: Int)>) {
        let counts = LockedValue((sent: 0, cancelled: 0))
        let handler: MockTransport.Handler = { _, _ in
            let number = counts.withLock { counts in
                counts.sent += 1
                return counts.sent
            }
            let (delay, status) = reply(number)
            do {
                try await Task.sleep(for: delay)
            } catch {
                counts.withLock { $0.cancelled += 1 }
                throw error
            }
            return status == 200
                ? .json(#"{"served":\#(number)}"#) : .status(HTTPResponse.Status(code: status))
        }
        let mock = MockTransport()
        mock.respondToAll(handler: handler)
        return (mock, counts)
    }

    @Test func theHedgeAnswersFirstAndTheSlowAttemptIsCancelled() async throws {
        let (mock, counts) = Self.mock { $0 == 1 ? (.seconds(30), 200) : (.zero, 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        let events = coordinator.events(bufferingNewest: 100)
        let started = ContinuousClock.now
        let value = try await Item().load(using: coordinator)
        #expect(String(decoding: value, as: UTF8.self) == #"{"served":2}"#)
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(counts.withLock { $0 } == (2, 1), "two sent, the slow one cancelled")
        await coordinator.shutdown()
        var hedges: [CoordinatorEvent.Kind] = []
        for await event in events where event.kind.name == .hedged { hedges.append(event.kind) }
        #expect(hedges.count == 1)
        #expect(hedges.first?.delay == .milliseconds(20))
        #expect(hedges.first?.host == "https://api.example.com")
    }

    @Test func aQuickAnswerSendsNoHedge() async throws {
        let (mock, counts) = Self.mock { _ in (.zero, 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        var item = Item()
        item.hedging = Hedging(delay: .fixed(.seconds(3)), maximumShare: 1)
        var slow = 0
        for _ in 0..<5 {
            let started = ContinuousClock.now
            _ = try await item.load(using: coordinator)
            if ContinuousClock.now - started >= .seconds(3) { slow += 1 }
        }
        try await Task.sleep(for: .milliseconds(3_500))
        // A load slower than the delay (on a starved machine) hedges, as it should; a quick one
        // never does, also once its answer is in.
        let sent = counts.withLock { $0.sent }
        #expect(sent >= 5 && sent <= 5 + slow, "each load's timer ended with its answer (\(slow) slower than 3 s)")
        await coordinator.shutdown()
    }

    @Test func onlyIdempotentLoadsHedge() async throws {
        // The POST's answer comes after its hedge's delay; the PUT's first attempt never does.
        let (mock, counts) = Self.mock { $0 == 2 ? (.seconds(30), 200) : (.milliseconds(150), 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        _ = try await Item(method: .post).load(using: coordinator)
        #expect(counts.withLock { $0.sent } == 1, "a POST is never hedged")
        _ = try await Item(method: .put).load(using: coordinator)
        #expect(counts.withLock { $0.sent } == 3, "a PUT is")
        await coordinator.shutdown()
    }

    @Test func aResourceOptsOutOfItsCoordinatorsHedging() async throws {
        let (mock, counts) = Self.mock { $0 == 2 ? (.seconds(30), 200) : (.milliseconds(100), 200) }
        var configuration = Self.configuration()
        configuration.hedging = Hedging(delay: .fixed(.milliseconds(10)), maximumShare: 1)
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        _ = try await Item(hedging: .never).load(using: coordinator)
        #expect(counts.withLock { $0.sent } == 1)
        _ = try await Item(hedging: nil).load(using: coordinator)
        #expect(counts.withLock { $0.sent } == 3, "nil takes the coordinator's")
        await coordinator.shutdown()
    }

    @Test func aFailureTheRetryPolicyWouldRepeatWaitsForTheHedge() async throws {
        // The first attempt fails with a 503 once the hedge is out; the hedge's 200 wins, and
        // no retry is sent.
        let mock = MockTransport()
        let sent = LockedValue(0)
        mock.respondToAll { _, _ in
            let number = sent.withLock { sent in
                sent += 1
                return sent
            }
            if number == 1 {
                let waited = ContinuousClock.now
                while sent.withLock({ $0 }) < 2, ContinuousClock.now - waited < .seconds(30) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                return .serviceUnavailable()
            }
            try await Task.sleep(for: .milliseconds(100))
            return .json(#"{"served":\#(number)}"#)
        }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        let events = coordinator.events(bufferingNewest: 100)
        let value = try await Item().load(using: coordinator)
        #expect(String(decoding: value, as: UTF8.self) == #"{"served":2}"#)
        #expect(sent.withLock { $0 } == 2)
        await coordinator.shutdown()
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events { names.append(event.kind.name) }
        #expect(names.filter { $0 == .hedged }.count == 1)
        #expect(!names.contains(.retried))
    }

    @Test func aFailureBeforeTheDelaySendsNoHedge() async throws {
        // The first attempt fails at once: the retry follows its policy, and no hedge goes.
        let (mock, counts) = Self.mock { $0 == 1 ? (.zero, 503) : (.zero, 200) }
        var configuration = Self.configuration()
        configuration.retryPolicy = RetryPolicy(initialDelay: .milliseconds(1), jitter: 0)
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        var item = Item()
        item.hedging = Hedging(delay: .fixed(.seconds(3)), maximumShare: 1)
        let value = try await item.load(using: coordinator)
        #expect(String(decoding: value, as: UTF8.self) == #"{"served":2}"#)
        try await Task.sleep(for: .milliseconds(3_500))
        #expect(counts.withLock { $0.sent } == 2, "the failure and its retry, no hedge")
        await coordinator.shutdown()
    }

    @Test func hedgesStayWithinTheShareAndTheRetryBudget() async throws {
        // Every first attempt is slow: 5% of 60 loads may hedge.
        let (mock, counts) = Self.mock { _ in (.milliseconds(40), 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        let events = coordinator.events(bufferingNewest: 1_000)
        var item = Item()
        item.hedging = Hedging(delay: .fixed(.milliseconds(5)), maximumShare: 0.05)
        for _ in 0..<60 { _ = try await item.load(using: coordinator) }
        let hedges = counts.withLock { $0.sent } - 60
        #expect(hedges >= 1 && hedges <= 3, "\(hedges) hedges for 60 loads")

        // A spent retry budget refuses hedges too.
        var configuration = Self.configuration()
        configuration.retryBudget = RetryBudget(ratio: 0, minimumPerSecond: 0)
        let (budgetMock, budgetCounts) = Self.mock { _ in (.milliseconds(40), 200) }
        let budgeted = RequestCoordinator(transport: budgetMock, configuration: configuration)
        for _ in 0..<5 { _ = try await Item().load(using: budgeted) }
        #expect(budgetCounts.withLock { $0.sent } == 5)
        await budgeted.shutdown()
        await coordinator.shutdown()
        var sent = 0
        for await event in events where event.kind.name == .hedged { sent += 1 }
        #expect(sent == hedges)
    }

    @Test func thePercentileDelayLearnsTheHost() async throws {
        // 40 loads answer in 2 ms; then a first attempt that stalls is hedged after about the
        // host's p95, far sooner than its stall.
        // The first request after the warm-up stalls.
        let stallAt = LockedValue(Int.max)
        let (mock, counts) = Self.mock { number in
            number == stallAt.withLock { $0 } ? (.seconds(30), 200) : (.milliseconds(2), 200)
        }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        let events = coordinator.events(bufferingNewest: 1_000)
        var item = Item()
        // Warming up with no share: no hedge goes. The machine counts the last 10 seconds, so
        // a warm-up slowed past 5 s (a sanitizer on a busy machine) is run again.
        item.hedging = Hedging(delay: .percentile(0.95, minimum: .milliseconds(1)), maximumShare: 0)
        var rounds = 0
        while true {
            rounds += 1
            let warmUp = ContinuousClock.now
            for _ in 0..<40 { _ = try await item.load(using: coordinator) }
            if ContinuousClock.now - warmUp < .seconds(5) || rounds == 6 { break }
        }
        let warmed = counts.withLock { $0.sent }
        #expect(warmed == 40 * rounds)
        stallAt.withLock { $0 = warmed + 1 }
        item.hedging = Hedging(delay: .percentile(0.95, minimum: .milliseconds(1)), maximumShare: 0.05)
        let started = ContinuousClock.now
        let value = try await item.load(using: coordinator)
        #expect(String(decoding: value, as: UTF8.self) == #"{"served":\#(warmed + 2)}"#)
        #expect(ContinuousClock.now - started < .seconds(25))
        await coordinator.shutdown()
        var delays: [Duration] = []
        for await event in events where event.kind.name == .hedged { delays.append(event.kind.delay ?? .zero) }
        #expect(delays.count == 1)
        #expect((delays.first ?? .zero) >= .milliseconds(2) && (delays.first ?? .zero) < .seconds(10))
    }

    @Test func shutdownEndsARaceAtOnce() async throws {
        let (mock, counts) = Self.mock { _ in (.seconds(30), 200) }
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration())
        let load = Task { try await Item().load(using: coordinator) }
        let waitStarted = ContinuousClock.now
        while counts.withLock({ $0.sent }) < 2 {
            guard ContinuousClock.now - waitStarted < .seconds(30) else {
                Issue.record("no hedge went")
                load.cancel()
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let started = ContinuousClock.now
        await coordinator.shutdown(cancellingInFlight: true)
        let result = await load.result
        #expect(ContinuousClock.now - started < .seconds(25))
        guard case .failure(let error as ServiceError) = result else {
            Issue.record("the load ended with \(result)")
            return
        }
        #expect(error.code == .cancelled || error.code == .shutDown)
        #expect(counts.withLock { $0.cancelled } == 2, "both attempts were cancelled")
    }

    /// For real, through curl: the first request of its key stalls 30 s; the hedge's answer
    /// wins, and the stalled transfer's connection is closed.
    @Test func overCurlTheHedgeWinsAndTheStalledConnectionCloses() async throws {
        struct SlowFirst: Resource {
            typealias Response = Data
            let base: String
            var endpoint: Endpoint {
                Endpoint(
                    base, path: "/slow-first",
                    query: [URLQueryItem(name: "key", value: "hedge"), URLQueryItem(name: "delayMs", value: "30000")])
            }
            var hedging: Hedging? { Hedging(delay: .fixed(.milliseconds(50)), maximumShare: 1) }
        }
        var configuration = Self.configuration()
        configuration.metricsFactory = nil
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let started = ContinuousClock.now
            let value = try await SlowFirst(base: server.baseURL).load(using: coordinator)
            #expect(String(decoding: value, as: UTF8.self) == #"{"served":2}"#)
            #expect(ContinuousClock.now - started < .seconds(15))
            #expect(await server.waitForClosedConnections(1, timeout: .seconds(20)), "the slow attempt was cut")
            #expect(server.snapshot.requestCount == 2)
        }
    }
}
