import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// Adaptive limits under a coordinator, against an upstream whose answers slow down with the
/// loads it has at once.
@Suite struct AdaptiveConcurrencyLoadTests {
    struct Item: Resource {
        typealias Response = Data
        let id: Int
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/item/\(id)") }
        var cachePolicy: CachePolicy { .networkOnly }
    }

    /// Answers in 10 ms with up to 4 at once, and in 10 ms × (at once / 4)² past that: times
    /// far above what a sanitizer adds on the client's side, which the baseline also holds.
    static func congestedUpstream() -> (MockTransport, LockedValue<(now: Int, peak: Int)>) {
        let mock = MockTransport()
        let load = LockedValue((now: 0, peak: 0))
        mock.respond(to: .get, "/item/*") { _, _ in
            let atOnce = load.withLock { load in
                load.now += 1
                load.peak = max(load.peak, load.now)
                return load.now
            }
            let factor = max(1, Double(atOnce) / 4)
            try await Task.sleep(for: .milliseconds(10) * (factor * factor))
            load.withLock { $0.now -= 1 }
            return .json("{}")
        }
        return (mock, load)
    }

    /// Runs `loads` loads from `callers` callers at once; returns the failures' messages.
    @discardableResult
    static func run(_ coordinator: RequestCoordinator, loads: Int, callers: Int) async -> [String] {
        let next = LockedValue(0)
        let failures = LockedValue([String]())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    while true {
                        let id = next.withLock { value in
                            defer { value += 1 }
                            return value
                        }
                        guard id < loads else { return }
                        do {
                            _ = try await Item(id: id).load(using: coordinator)
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
        }
        return failures.withLock { $0 }
    }

    /// A host starts at the initial limit, never below the minimum: of six loads at once,
    /// that many reach the upstream and the others wait in line for the host.
    @Test(arguments: [
        (AdaptiveConcurrency(initialLimit: 2), 2), (AdaptiveConcurrency(initialLimit: 1, minimumLimit: 3), 3),
    ])
    func aHostStartsAtItsInitialLimit(adaptive: AdaptiveConcurrency, expected: Int) async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item/*", with: .json("{}"))
        mock.holdResponses()
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        configuration.adaptiveConcurrency = adaptive
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let loads = (0..<6).map { id in Task { try await Item(id: id).load(using: coordinator) } }
        #expect(await mock.waitForRequests(expected))
        let waited = ContinuousClock.now
        while coordinator.loadsWaitingByHost["https://api.example.com"] != 6 - expected,
            ContinuousClock.now - waited < .seconds(30)
        {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(coordinator.loadsWaitingByHost["https://api.example.com"] == 6 - expected)
        #expect(mock.requestCount == expected)
        mock.releaseResponses()
        for load in loads { _ = try await load.value }
        #expect(mock.requestCount == 6)
        await coordinator.shutdown()
    }

    /// 64 callers at once: with the fixed limit the upstream has 64 at once; with an adaptive
    /// one, the limit settles where its answers stay near their unloaded time.
    @Test(.timeLimit(.minutes(5))) func theLimitFallsToWhatTheUpstreamTakes() async throws {
        let (fixedMock, fixedLoad) = Self.congestedUpstream()
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        // No load budget: on a starved machine (a sanitizer's run beside the other suites) a
        // client-side delay reads as congestion, the limit falls to 1, and the last of 600
        // queued loads can wait past the 60-second budget. The test is about the limit.
        configuration.loadBudget = nil
        let fixed = RequestCoordinator(transport: fixedMock, configuration: configuration)
        await Self.run(fixed, loads: 64, callers: 64)
        await fixed.shutdown()
        #expect(fixedLoad.withLock { $0.peak } >= 32, "the fixed limit lets them all through")

        let (mock, load) = Self.congestedUpstream()
        configuration.adaptiveConcurrency = AdaptiveConcurrency()
        let adaptive = RequestCoordinator(transport: mock, configuration: configuration)
        let events = adaptive.events(bufferingNewest: 10_000)
        let failures = await Self.run(adaptive, loads: 600, callers: 64)
        #expect(failures.isEmpty, "\(failures.count) failed, the first: \(failures.first ?? "")")
        #expect(load.withLock { $0.peak } < 32, "the upstream never had the 64 callers at once")
        // Once it settled, the host queue holds the upstream to the limit: 200 more loads from
        // 64 callers never have more at once than the highest limit of that time.
        load.withLock { $0.peak = 0 }
        let later = adaptive.events(bufferingNewest: 10_000)
        let laterFailures = await Self.run(adaptive, loads: 200, callers: 64)
        #expect(laterFailures.isEmpty, "\(laterFailures.count) failed, the first: \(laterFailures.first ?? "")")
        #expect(mock.requestCount == 800, "every load was sent")
        await adaptive.shutdown()
        let settled = await Self.limits(in: events)
        let laterLimits = await Self.limits(in: later)
        // Limits are announced from concurrent loads, not always in order: the last few
        // together stand for where it settled.
        let settledLimit = try #require(settled.dropLast(laterLimits.count).suffix(5).max())
        // Past 4 or 5 at once the answers take over 1.5 times the unloaded time: the limit settles near
        // there (bounds loose enough for a sanitizer's slow run).
        #expect(settledLimit < 16, "the limit settled low: \(settled.suffix(20))")
        let bound = max(settledLimit, laterLimits.max() ?? 0)
        #expect(load.withLock { $0.peak } <= bound, "at most \(bound) at once, as the limit said")
    }

    /// Runs one load after another (one in flight: the limit of 4 never grows) through a mock
    /// whose answer to `/item/<n>` takes `latencies[n]`, or is a 503 past them, pausing
    /// `pause` before the second; returns the limits announced. The answers' times and the
    /// pause pass on a test clock, the coordinator's: exact, however busy the machine.
    static func sequentialLimits(
        _ adaptive: AdaptiveConcurrency, latencies: [Duration], loads: Int? = nil, pause: Duration = .zero
    ) async -> [Int] {
        let clock = ImmediateTestClock()
        let mock = MockTransport()
        mock.respond(to: .get, "/item/*") { request, _ in
            let index = Int(request.path?.split(separator: "/").last ?? "") ?? 0
            guard index < latencies.count else { return .serviceUnavailable() }
            try await clock.sleep(for: latencies[index])
            return .json("{}")
        }
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        configuration.retryPolicy = .none
        configuration.circuitBreaker = nil
        configuration.adaptiveConcurrency = adaptive
        configuration.clock = clock
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        let events = coordinator.events(bufferingNewest: 100)
        for id in 0..<(loads ?? latencies.count) {
            if id == 1 { try? await clock.sleep(for: pause) }
            _ = try? await Item(id: id).load(using: coordinator)
        }
        await coordinator.shutdown()
        return await limits(in: events)
    }

    /// An overloaded host's answer (a 503) cuts the limit to `backoff` of itself (of 10: 5 and
    /// 7, where the default 0.9 gives 9).
    @Test(arguments: [(0.5, 5), (0.75, 7)])
    func aCutKeepsTheBackoffShareOfTheLimit(backoff: Double, expected: Int) async {
        let adaptive = AdaptiveConcurrency(initialLimit: 10, backoff: backoff)
        #expect(await Self.sequentialLimits(adaptive, latencies: [], loads: 1) == [expected])
    }

    /// An answer 40 times slower than the host's fastest cuts the limit under a tolerance of 2,
    /// not under one of 200.
    @Test(arguments: [(2.0, [2]), (200.0, [])])
    func aSlowAnswerCutsTheLimitPastTheTolerance(tolerance: Double, expected: [Int]) async {
        let adaptive = AdaptiveConcurrency(initialLimit: 4, latencyTolerance: tolerance, backoff: 0.5)
        let limits = await Self.sequentialLimits(adaptive, latencies: [.milliseconds(10), .milliseconds(400)])
        #expect(limits == expected)
    }

    /// The fastest answer stays the baseline through one change of latency window, not two: a
    /// slow answer 1.4 s after it is judged against it with windows of a minute or of a second
    /// (one change), and against itself with windows of 100 ms (past two).
    @Test(arguments: [(Duration.seconds(60), [2]), (.seconds(1), [2]), (.milliseconds(100), [])])
    func theBaselineLastsTwoLatencyWindows(window: Duration, expected: [Int]) async {
        let adaptive = AdaptiveConcurrency(initialLimit: 4, latencyTolerance: 2, backoff: 0.5, latencyWindow: window)
        let limits = await Self.sequentialLimits(
            adaptive, latencies: [.milliseconds(10), .milliseconds(400)], pause: .seconds(1))
        #expect(limits == expected)
    }

    /// The limits `events` announced for the upstream's host, in the order they came.
    static func limits(in events: AsyncStream<CoordinatorEvent>) async -> [Int] {
        var limits: [Int] = []
        for await event in events where event.kind.name == .limitChanged {
            #expect(event.kind.host == "https://api.example.com")
            if let limit = event.kind.limit { limits.append(limit) }
        }
        return limits
    }
}
