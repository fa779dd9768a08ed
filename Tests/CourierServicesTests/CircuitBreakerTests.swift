import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Circuits under a coordinator.
@Suite struct CircuitBreakerLoadTests {
    struct Item: Resource {
        typealias Response = Data
        var host = "api.example.com"
        var path = "/item"
        var endpoint: Endpoint { Endpoint("https://\(host)", path: path) }
    }

    struct Route: Resource {
        typealias Response = Data
        let base: String
        var path: String
        var query: [URLQueryItem] = []
        var policy: RetryPolicy? = RetryPolicy.none
        var endpoint: Endpoint { Endpoint(base, path: path, query: query) }
        var retryPolicy: RetryPolicy? { policy }
    }

    static func configuration(
        _ breaker: CircuitBreaker?, attempts: Int = 1, clock: (any Clock<Duration>)? = nil
    ) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.retryPolicy = RetryPolicy(maximumAttempts: attempts, initialDelay: .milliseconds(1), jitter: 0)
        configuration.retryBudget = nil
        configuration.circuitBreaker = breaker
        configuration.cache = nil
        if let clock { configuration.clock = clock }
        return configuration
    }

    /// With the defaults, ten 503s in a row open it: the next load is not sent, and says when
    /// to try again.
    @Test func aFailingHostIsNotCalledWhileItsCircuitIsOpen() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let clock = ImmediateTestClock()
        let coordinator = RequestCoordinator(
            transport: mock, configuration: Self.configuration(.default, clock: clock))
        let events = coordinator.events(bufferingNewest: 100)
        for _ in 0..<10 {
            let error = await serviceError { _ = try await Item().load(using: coordinator) }
            #expect(error?.code == .unacceptableStatus)
        }
        try await clock.sleep(for: .seconds(1))
        let error = await serviceError { _ = try await Item().load(using: coordinator) }
        #expect(error?.code == .circuitOpen)
        #expect(error?.retryAfter == .seconds(4))
        #expect(error?.recoverySuggestion.hasSuffix("It may succeed again in 4.0 s.") == true)
        #expect(error?.message.contains("https://api.example.com") == true)
        #expect(mock.requestCount == 10)
        // Another host is not concerned.
        mock.respond(to: .get, "/other", with: .json("{}"))
        _ = try await Item(host: "b.example.com", path: "/other").load(using: coordinator)
        // Shutting down ends the event stream after what was emitted: the loop ends.
        await coordinator.shutdown()
        var opened: [CoordinatorEvent] = []
        for await event in events where event.kind.name == .circuitOpened { opened.append(event) }
        #expect(opened.count == 1)
        #expect(opened.first?.kind.host == "https://api.example.com")
        #expect(opened.first?.kind.delay == .seconds(5))
    }

    /// The defaults together (retry policy, retry budget, circuit): an upstream that fails
    /// every request gets 10 requests for 500 loads, where the retry policy alone sent 1,500.
    @Test func withTheDefaultsAFailingUpstreamGetsTenRequestsFor500Loads() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        // Retry pauses move this clock, and nothing else does: the cool-down never ends.
        configuration.clock = ImmediateTestClock()
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        var codes: [String: Int] = [:]
        for _ in 0..<500 {
            let error = await serviceError { _ = try await Item().load(using: coordinator) }
            codes[error?.code.description ?? "none", default: 0] += 1
        }
        #expect(mock.requestCount == 10)
        #expect(codes["circuitOpen", default: 0] >= 490)
        await coordinator.shutdown()
    }

    /// After its cool-down, one load goes as a probe; its success closes the circuit.
    @Test func aProbeThatSucceedsClosesTheCircuit() async throws {
        let mock = MockTransport()
        mock.respond(
            to: .get, "/item",
            with: [.serviceUnavailable(), .serviceUnavailable(), .serviceUnavailable(), .json(#"{"ok":true}"#)])
        let clock = ImmediateTestClock()
        let coordinator = RequestCoordinator(
            transport: mock,
            configuration: Self.configuration(
                CircuitBreaker(consecutiveFailures: 2, coolDown: .seconds(5)), clock: clock))
        let events = coordinator.events(bufferingNewest: 100)
        for _ in 0..<2 { _ = try? await Item().load(using: coordinator) }
        #expect(await serviceError { _ = try await Item().load(using: coordinator) }?.code == .circuitOpen)
        try await clock.sleep(for: .seconds(5))
        // The probe fails: open again, for 10 s.
        #expect(await serviceError { _ = try await Item().load(using: coordinator) }?.code == .unacceptableStatus)
        try await clock.sleep(for: .seconds(9))
        let early = await serviceError { _ = try await Item().load(using: coordinator) }
        #expect(early?.code == .circuitOpen)
        #expect(early?.retryAfter == .seconds(1))
        try await clock.sleep(for: .seconds(1))
        _ = try await Item().load(using: coordinator)
        _ = try await Item().load(using: coordinator)
        #expect(mock.requestCount == 5)
        await coordinator.shutdown()
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events where [.circuitOpened, .circuitClosed].contains(event.kind.name) {
            names.append(event.kind.name)
        }
        #expect(names == [.circuitOpened, .circuitOpened, .circuitClosed])
    }

    /// Failures that never come twice in a row still open it once they are the configured
    /// share of enough attempts; with more attempts required, the same answers leave it closed.
    @Test func aFailureRateOpensItOnceThereAreTheMinimumAttempts() async throws {
        for minimumAttempts in [4, 6] {
            let mock = MockTransport()
            mock.respond(
                to: .get, "/item",
                with: [.json("{}"), .serviceUnavailable(), .json("{}"), .serviceUnavailable(), .json("{}")])
            let breaker = CircuitBreaker(consecutiveFailures: 100, failureRate: 0.5, minimumAttempts: minimumAttempts)
            let coordinator = RequestCoordinator(
                transport: mock, configuration: Self.configuration(breaker, clock: ImmediateTestClock()))
            for _ in 0..<4 { _ = try? await Item().load(using: coordinator) }
            if minimumAttempts == 4 {
                let fifth = await serviceError { _ = try await Item().load(using: coordinator) }
                #expect(fifth?.code == .circuitOpen, "2 of 4 failed: half, with 4 attempts seen")
                #expect(mock.requestCount == 4)
            } else {
                _ = try await Item().load(using: coordinator)  // 4 attempts are fewer than the 6 required
                #expect(mock.requestCount == 5)
            }
            await coordinator.shutdown()
        }
    }

    /// Each failed probe doubles the cool-down, up to the breaker's maximum.
    @Test func failedProbesLengthenTheCoolDownUpToItsMaximum() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let clock = ImmediateTestClock()
        let breaker = CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5), maximumCoolDown: .seconds(7))
        let coordinator = RequestCoordinator(
            transport: mock, configuration: Self.configuration(breaker, clock: clock))
        var waits: [Duration?] = []
        _ = try? await Item().load(using: coordinator)
        for _ in 0..<3 {
            let refused = await serviceError { _ = try await Item().load(using: coordinator) }
            #expect(refused?.code == .circuitOpen)
            waits.append(refused?.retryAfter)
            try await clock.sleep(for: refused?.retryAfter ?? .seconds(60))
            _ = try? await Item().load(using: coordinator)  // the probe, which fails
        }
        #expect(waits == [.seconds(5), .seconds(7), .seconds(7)])
        #expect(mock.requestCount == 4)
        await coordinator.shutdown()
    }

    /// Half-open, a breaker with two probes lets two loads through at once and refuses a
    /// third; it closes on the second success, not the first.
    @Test func aHalfOpenCircuitLetsItsProbesThroughAtOnce() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        mock.respond(to: .get, "/c", with: .json("{}"))
        let opened = LockedValue(Set<String>())
        for path in ["/a", "/b"] {
            mock.respond(to: .get, path) { _, _ in
                // Held until the test opens this path.
                let waited = ContinuousClock.now
                while !opened.withLock({ $0.contains(path) }), ContinuousClock.now - waited < .seconds(30) {
                    try await Task.sleep(for: .milliseconds(2))
                }
                return .json("{}")
            }
        }
        let clock = ImmediateTestClock()
        let breaker = CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5), probes: 2)
        let coordinator = RequestCoordinator(
            transport: mock, configuration: Self.configuration(breaker, clock: clock))
        let events = coordinator.events(bufferingNewest: 100)
        _ = try? await Item().load(using: coordinator)
        try await clock.sleep(for: .seconds(5))
        let probeA = Task { try await Item(path: "/a").load(using: coordinator) }
        let probeB = Task { try await Item(path: "/b").load(using: coordinator) }
        #expect(await mock.waitForRequests(3, timeout: .seconds(30)))  // the failure and both probes
        let third = await serviceError { _ = try await Item(path: "/c").load(using: coordinator) }
        #expect(third?.code == .circuitOpen)
        opened.withLock { _ = $0.insert("/a") }
        _ = try await probeA.value
        // One success of two: still half-open, and no new probe takes the place of the first.
        let fourth = await serviceError { _ = try await Item(path: "/c").load(using: coordinator) }
        #expect(fourth?.code == .circuitOpen)
        opened.withLock { _ = $0.insert("/b") }
        _ = try await probeB.value
        _ = try await Item(path: "/c").load(using: coordinator)  // closed: sent
        #expect(mock.requestCount == 4)
        await coordinator.shutdown()
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events where [.circuitOpened, .circuitClosed].contains(event.kind.name) {
            names.append(event.kind.name)
        }
        #expect(names == [.circuitOpened, .circuitClosed])
    }

    /// A retry the policy wants is not made into a circuit that this failure just opened.
    @Test func aRetryIntoAnOpenCircuitIsRefused() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let coordinator = RequestCoordinator(
            transport: mock,
            configuration: Self.configuration(CircuitBreaker(consecutiveFailures: 2), attempts: 5))
        let events = coordinator.events(bufferingNewest: 100)
        let error = await serviceError { _ = try await Item().load(using: coordinator) }
        #expect(error?.code == .unacceptableStatus, "the failure that asked for the retry")
        #expect(mock.requestCount == 2)
        await coordinator.shutdown()
        var reasons: [String] = []
        for await event in events where event.kind.name == .retryRefused { reasons.append(event.kind.reason ?? "") }
        #expect(reasons == ["circuit"])
    }

    /// A caller's own short deadline is not the host's failure: many loads cut by their
    /// deadline leave the circuit closed.
    @Test func timeoutsADeadlineCausedDoNotOpenIt() async throws {
        let breaker = CircuitBreaker(consecutiveFailures: 2)
        try await withCoordinator(configuration: Self.configuration(breaker)) { server, coordinator in
            // The server sends a head and stalls: each load ends at its deadline.
            let route = Route(base: server.baseURL, path: "/stall")
            for _ in 0..<4 {
                let error = await serviceError {
                    _ = try await withDeadline(in: .milliseconds(200)) { try await route.load(using: coordinator) }
                }
                #expect(error?.code == .timedOut, "not circuitOpen: \(String(describing: error))")
            }
        }
    }

    /// 4xx and 500 answers say the host is up: they never open a circuit.
    @Test func answersThatAreNotOutagesKeepItClosed() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/missing", with: .status(404))
        mock.respond(to: .get, "/broken", with: .status(500))
        let coordinator = RequestCoordinator(
            transport: mock, configuration: Self.configuration(CircuitBreaker(consecutiveFailures: 1)))
        for path in Array(repeating: "/missing", count: 5) + Array(repeating: "/broken", count: 5) {
            #expect(
                await serviceError { _ = try await Item(path: path).load(using: coordinator) }?.code
                    == .unacceptableStatus)
        }
        #expect(mock.requestCount == 10)
        await coordinator.shutdown()
    }

    /// Loads a responder answers (mock mode) have no upstream to protect.
    @Test func loadsAResponderAnswersNeverOpenACircuit() async throws {
        struct Unavailable: ResourceResponder {
            func response<R: Resource>(for resource: R, request: HTTPRequest) async throws -> TransportResponse {
                TransportResponse(head: HTTPResponse(status: .serviceUnavailable), body: Data())
            }
        }
        var configuration = Self.configuration(CircuitBreaker(consecutiveFailures: 1))
        configuration.responder = Unavailable()
        let coordinator = RequestCoordinator(transport: MockTransport(), configuration: configuration)
        for _ in 0..<5 {
            #expect(await serviceError { _ = try await Item().load(using: coordinator) }?.code == .unacceptableStatus)
        }
        await coordinator.shutdown()
    }

    /// Without a circuit breaker every load is sent.
    @Test func withoutABreakerEveryLoadIsSent() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let coordinator = RequestCoordinator(transport: mock, configuration: Self.configuration(nil))
        for _ in 0..<20 { _ = try? await Item().load(using: coordinator) }
        #expect(mock.requestCount == 20)
        await coordinator.shutdown()
    }

    /// For real, through curl: a port nobody listens on opens the circuit after ten refused
    /// connections; the next load fails without a connection attempt.
    @Test func refusedConnectionsOpenTheCircuit() async throws {
        let refusing = try RefusingPort()
        let port = refusing.port
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport, configuration: Self.configuration(.default))
        let route = Route(base: "http://127.0.0.1:\(port)", path: "/json")
        for _ in 0..<10 {
            #expect(await serviceError { _ = try await route.load(using: coordinator) }?.code == .cannotConnect)
        }
        let error = await serviceError { _ = try await route.load(using: coordinator) }
        #expect(error?.code == .circuitOpen)
        #expect((error?.retryAfter ?? .zero) > .zero)
        await coordinator.shutdown()
        await transport.shutdown()
        _ = refusing
    }

    /// For real: a server that answers 503 for a while, then recovers; the circuit opens, and
    /// the first load after the cool-down closes it.
    @Test func aRecoveredServerClosesTheCircuit() async throws {
        let breaker = CircuitBreaker(consecutiveFailures: 3, coolDown: .seconds(5))
        // The cool-down passes on this clock when the test says so, however slow the run.
        let clock = ImmediateTestClock()
        try await withCoordinator(configuration: Self.configuration(breaker, clock: clock)) { server, coordinator in
            let route = Route(
                base: server.baseURL, path: "/flaky",
                query: [
                    URLQueryItem(name: "key", value: "circuit-recovery"), URLQueryItem(name: "failures", value: "3"),
                ])
            for _ in 0..<3 {
                #expect(
                    await serviceError { _ = try await route.load(using: coordinator) }?.status == .serviceUnavailable)
            }
            #expect(await serviceError { _ = try await route.load(using: coordinator) }?.code == .circuitOpen)
            try await clock.sleep(for: .seconds(5))
            let value = try await route.load(using: coordinator)
            #expect(String(decoding: value, as: UTF8.self) == #"{"attempts":4}"#)
        }
    }

    /// A load that may serve what it has stored does so while the circuit is open.
    @Test func anOpenCircuitServesTheStoredValueWhenThePolicyAllows() async throws {
        struct Cached: Resource {
            typealias Response = Data
            var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/cached") }
            var cachePolicy: CachePolicy { .networkElseCache() }
            var retryPolicy: RetryPolicy? { RetryPolicy.none }
        }
        let mock = MockTransport()
        mock.respond(to: .get, "/cached", with: [.json(#"{"v":1}"#), .serviceUnavailable()])
        var configuration = Self.configuration(CircuitBreaker(consecutiveFailures: 1))
        configuration.cache = TieredCache()
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        _ = try await Cached().load(using: coordinator)
        _ = try await Cached().load(using: coordinator)  // the 503: stored value, circuit opens
        let loaded = try await coordinator.load(Cached())
        #expect(String(decoding: loaded.value, as: UTF8.self) == #"{"v":1}"#)
        #expect(loaded.networkError?.code == .circuitOpen)
        #expect(mock.requestCount == 2)
        await coordinator.shutdown()
    }
}
