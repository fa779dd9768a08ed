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

    static func fails(_ machine: inout Machine, _ count: Int, at now: Duration) -> [Machine.Transition] {
        (0..<count).map { _ in
            #expect(machine.admit(at: now) == .pass)
            return machine.record(.failure, probe: false, at: now)
        }
    }

    @Test func consecutiveFailuresOpenIt() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 5, coolDown: .seconds(5)))
        let transitions = Self.fails(&machine, 5, at: .seconds(1))
        #expect(transitions == [.none, .none, .none, .none, .opened(coolDown: .seconds(5))])
        #expect(machine.admit(at: .seconds(2)) == .refuse(until: .seconds(6)))
        #expect(machine.admit(at: .milliseconds(5_999)) == .refuse(until: .seconds(6)))
    }

    @Test func aSuccessResetsTheRun() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 3, minimumAttempts: 1_000))
        for _ in 0..<10 {
            _ = Self.fails(&machine, 2, at: .seconds(1))
            #expect(machine.record(.success, probe: false, at: .seconds(1)) == .none)
        }
        #expect(machine.state == .closed(consecutive: 0))
    }

    @Test func aFailureRateOpensItOnceThereAreEnoughAttempts() {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 100, failureRate: 0.5, minimumAttempts: 20, window: .seconds(10)))
        var transitions: [Machine.Transition] = []
        for index in 0..<20 {
            transitions.append(
                machine.record(index.isMultiple(of: 2) ? .success : .failure, probe: false, at: .seconds(1)))
        }
        // Half failed from the second attempt on, but the rate is judged from the 20th.
        #expect(transitions.dropLast().allSatisfy { $0 == .none })
        #expect(transitions.last == .opened(coolDown: .seconds(5)))
    }

    @Test func theRateForgetsAttemptsThatLeftTheWindow() {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 100, failureRate: 0.5, minimumAttempts: 4, window: .seconds(10)))
        for _ in 0..<3 { _ = machine.record(.failure, probe: false, at: .seconds(0)) }
        #expect(machine.record(.success, probe: false, at: .seconds(0)) == .none)
        // 11 s later those four are gone: three failures and a success is not enough attempts.
        for _ in 0..<3 { #expect(machine.record(.success, probe: false, at: .seconds(11)) == .none) }
        #expect(machine.record(.failure, probe: false, at: .seconds(11)) == .none)
        #expect(machine.record(.failure, probe: false, at: .seconds(11)) == .none, "2 of 5")
        #expect(machine.record(.failure, probe: false, at: .seconds(11)) == .opened(coolDown: .seconds(5)), "3 of 6")
    }

    @Test func aProbeAfterTheCoolDownClosesIt() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5)))
        _ = Self.fails(&machine, 1, at: .zero)
        #expect(machine.admit(at: .seconds(5)) == .probe)
        #expect(machine.admit(at: .seconds(5)) == .refuse(until: nil), "one probe at a time")
        #expect(machine.record(.success, probe: true, at: .seconds(6)) == .closed)
        #expect(machine.admit(at: .seconds(6)) == .pass)
        #expect(machine.state == .closed(consecutive: 0))
    }

    @Test func severalProbesMustAllSucceed() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1), probes: 2))
        _ = Self.fails(&machine, 1, at: .zero)
        #expect(machine.admit(at: .seconds(1)) == .probe)
        #expect(machine.admit(at: .seconds(1)) == .probe)
        #expect(machine.admit(at: .seconds(1)) == .refuse(until: nil))
        #expect(machine.record(.success, probe: true, at: .seconds(1)) == .none)
        #expect(machine.admit(at: .seconds(1)) == .refuse(until: nil), "a success does not free a place")
        #expect(machine.record(.success, probe: true, at: .seconds(1)) == .closed)
    }

    @Test func eachFailedProbeDoublesTheCoolDownUpToItsMaximum() {
        var machine = Machine(
            CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(5), maximumCoolDown: .seconds(30)))
        _ = Self.fails(&machine, 1, at: .zero)
        var now = Duration.zero
        var coolDowns: [Duration] = [.seconds(5)]
        for _ in 0..<4 {
            now += coolDowns.last!
            #expect(machine.admit(at: now - .milliseconds(1)) != .probe)
            #expect(machine.admit(at: now) == .probe)
            guard case .opened(let coolDown) = machine.record(.failure, probe: true, at: now) else {
                Issue.record("a failed probe opens the circuit again")
                return
            }
            coolDowns.append(coolDown)
        }
        #expect(coolDowns == [.seconds(5), .seconds(10), .seconds(20), .seconds(30), .seconds(30)])
        // Closing starts over from the first cool-down.
        now += .seconds(30)
        #expect(machine.admit(at: now) == .probe)
        #expect(machine.record(.success, probe: true, at: now) == .closed)
        #expect(Self.fails(&machine, 1, at: now) == [.opened(coolDown: .seconds(5))])
    }

    @Test func anAbandonedProbeGivesItsPlaceBack() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1)))
        _ = Self.fails(&machine, 1, at: .zero)
        #expect(machine.admit(at: .seconds(1)) == .probe)
        #expect(machine.record(.abandoned, probe: true, at: .seconds(1)) == .none)
        #expect(machine.admit(at: .seconds(1)) == .probe)
    }

    @Test func lateOutcomesDoNotMoveTheCircuit() {
        var machine = Machine(CircuitBreaker(consecutiveFailures: 1, coolDown: .seconds(1)))
        _ = Self.fails(&machine, 1, at: .zero)
        // Attempts admitted before it opened come back while it is open, then half-open.
        #expect(machine.record(.success, probe: false, at: .milliseconds(10)) == .none)
        #expect(machine.admit(at: .seconds(1)) == .probe)
        #expect(machine.record(.success, probe: false, at: .seconds(1)) == .none)
        #expect(machine.record(.failure, probe: false, at: .seconds(1)) == .none)
        #expect(machine.state == .halfOpen(probesOut: 1, successes: 0, coolDown: .seconds(1)))
    }

    /// Thousands of random sequences of attempts admitted, and ended in any order: the number
    /// of probes out never passes the limit, a closed circuit refuses nothing, an open one
    /// lets nothing but probes through, and every refusal names a moment still to come.
    @Test(arguments: [1, 2, 3]) func randomSequencesKeepTheInvariants(probes: Int) {
        var random = SeededGenerator(seed: UInt64(probes) * 7_919)
        for _ in 0..<2_000 {
            let breaker = CircuitBreaker(
                consecutiveFailures: Int.random(in: 1...4, using: &random), failureRate: 0.5, minimumAttempts: 6,
                window: .seconds(2), coolDown: .milliseconds(300), maximumCoolDown: .seconds(2), probes: probes)
            var machine = Machine(breaker)
            var now = Duration.zero
            var outstanding: [Bool] = []  // admitted attempts not ended yet: whether each is a probe
            for _ in 0..<60 {
                now += .milliseconds(Int.random(in: 0...150, using: &random))
                if outstanding.isEmpty || Bool.random(using: &random) {
                    let before = machine.state
                    switch machine.admit(at: now) {
                    case .pass:
                        guard case .closed = before else {
                            Issue.record("passed while \(before)")
                            return
                        }
                        outstanding.append(false)
                    case .probe:
                        outstanding.append(true)
                    case .refuse(let until):
                        if case .closed = before { Issue.record("refused while closed") }
                        if let until, until <= now { Issue.record("refused until a moment past") }
                    }
                } else {
                    let index = Int.random(in: 0..<outstanding.count, using: &random)
                    let probe = outstanding.remove(at: index)
                    let outcomes: [Machine.Outcome] = [.success, .failure, .abandoned]
                    _ = machine.record(outcomes.randomElement(using: &random)!, probe: probe, at: now)
                }
                if case .halfOpen(let out, let successes, _) = machine.state {
                    #expect(out >= 0 && out + successes <= probes, "\(machine.state)")
                    #expect(out <= outstanding.filter { $0 }.count, "more probes out than admitted")
                }
            }
        }
    }
}

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
        var opened: [CoordinatorEvent] = []
        for await event in events {
            if event.kind.name == .circuitOpened { opened.append(event) }
            if event.kind.name == .finished { break }
        }
        #expect(opened.count == 1)
        #expect(opened.first?.kind.host == "https://api.example.com")
        #expect(opened.first?.kind.delay == .seconds(5))
        await coordinator.shutdown()
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
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events {
            if [.circuitOpened, .circuitClosed].contains(event.kind.name) { names.append(event.kind.name) }
            if event.kind.name == .circuitClosed { break }
        }
        #expect(names == [.circuitOpened, .circuitOpened, .circuitClosed])
        await coordinator.shutdown()
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
        for await event in events where event.kind.name == .retryRefused {
            #expect(event.kind.reason == "circuit")
            break
        }
        await coordinator.shutdown()
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
        #expect((error?.retryAfter ?? .zero) > .seconds(4))
        await coordinator.shutdown()
        await transport.shutdown()
        _ = refusing
    }

    /// For real: a server that answers 503 for a while, then recovers; the circuit opens, and
    /// the first load after the cool-down closes it.
    @Test func aRecoveredServerClosesTheCircuit() async throws {
        let breaker = CircuitBreaker(consecutiveFailures: 3, coolDown: .milliseconds(300))
        try await withCoordinator(configuration: Self.configuration(breaker)) { server, coordinator in
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
            try await Task.sleep(for: .milliseconds(350))
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
