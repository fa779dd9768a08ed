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
