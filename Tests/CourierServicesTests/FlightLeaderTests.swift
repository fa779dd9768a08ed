import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

/// A load that leads its transfer runs it on its own task when the transport can cancel a
/// transfer from outside its task (`CurlTransport`, `MockTransport`); with any other transport
/// the transfer runs in a task of its own. These tests hold both to the same guarantees.
@Suite("A load leads its transfer on its own task")
struct FlightLeaderTests {
    struct Profile: Resource {
        typealias Response = Gate
        var endpoint: Endpoint { Endpoint("http://mock.test", path: "/profile") }
    }

    /// A POST its resource shares with identical ones (`coalescing: .always`).
    struct SharedPost: Resource {
        typealias Response = Gate
        var method: HTTPRequest.Method { .post }
        var coalescing: Coalescing { .always }
        var endpoint: Endpoint { Endpoint("http://mock.test", path: "/profile") }
    }

    /// Forwards to a `MockTransport` without saying it honours a transfer's cancellation, as a
    /// transport written outside Courier would.
    struct PlainTransport: HTTPTransport {
        let mock: MockTransport
        func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
            -> TransportResponse
        {
            try await mock.send(request, body: body, options: options)
        }
    }

    static func mock() -> MockTransport {
        let mock = MockTransport()
        mock.respond(to: .get, "/profile", with: .json(#"{"gate":"profile","served":1}"#))
        mock.respond(to: .post, "/profile", with: .json(#"{"gate":"post","served":1}"#))
        return mock
    }

    @Test(
        "cancelling the leader: a load that joined takes over and sends again (or, with a transport that cannot cancel from outside, keeps the first transfer); every other joiner gets the value",
        arguments: [true, false])
    func leaderLeaves(honours: Bool) async throws {
        let mock = Self.mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: honours ? mock : PlainTransport(mock: mock))
        #expect(coordinator.transportHonoursCancellation == honours)
        let leader = Task { try await Profile().load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let joiners = (0..<9).map { _ in Task { try await Profile().load(using: coordinator) } }
        #expect(await coordinator.waitForWaiters(10))
        leader.cancel()
        #expect(await serviceError { _ = try await leader.value }?.code == .cancelled)
        if honours {
            #expect(await mock.waitForRequests(2))  // the first joiner took over
            #expect(await coordinator.waiterCount == 9)
        }
        mock.releaseResponses()
        for joiner in joiners { #expect(try await joiner.value == Gate(gate: "profile", served: 1)) }
        #expect(mock.requestCount == (honours ? 2 : 1))
        #expect(mock.cancelledCount == (honours ? 1 : 0))
        #expect(await coordinator.waiterCount == 0)
    }

    @Test("cancelled leaders one after another: the flight passes on until one lands")
    func handOverRepeatedly() async throws {
        let mock = Self.mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        var loads = [Task { try await Profile().load(using: coordinator) }]
        #expect(await mock.waitForRequests(1))
        // Joiners take over in the order they joined: started one at a time, they join in
        // the array's order, so cancelling in that order always cancels the one that leads.
        for count in 2...5 {
            loads.append(Task { try await Profile().load(using: coordinator) })
            #expect(await coordinator.waitForWaiters(count))
        }
        for (index, load) in loads.prefix(3).enumerated() {
            load.cancel()
            #expect(await serviceError { _ = try await load.value }?.code == .cancelled)
            #expect(await mock.waitForRequests(index + 2))
        }
        mock.releaseResponses()
        for load in loads.suffix(2) { #expect(try await load.value.gate == "profile") }
        #expect(mock.requestCount == 4)
        #expect(mock.cancelledCount == 3)
    }

    @Test("a shared POST never goes out twice: its cancelled leader leaves the others the first transfer")
    func sharedPostKeepsOneTransfer() async throws {
        let mock = Self.mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let leader = Task { try await SharedPost().load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let joiners = (0..<4).map { _ in Task { try await SharedPost().load(using: coordinator) } }
        #expect(await coordinator.waitForWaiters(5))
        leader.cancel()
        #expect(await serviceError { _ = try await leader.value }?.code == .cancelled)
        mock.releaseResponses()
        for joiner in joiners { #expect(try await joiner.value.gate == "post") }
        #expect(mock.requestCount == 1)
        #expect(mock.cancelledCount == 0)
    }

    @Test("shutdown(cancellingInFlight:) ends a leader whose mock route handler never returns")
    func shutdownEndsASuspendedHandler() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/profile") { _, _ in
            try await Task.sleep(for: .seconds(3_600))
            return .json("{}")
        }
        let coordinator = RequestCoordinator(transport: mock)
        let load = Task { try await Profile().load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        await coordinator.shutdown(cancellingInFlight: true)
        #expect(await serviceError { _ = try await load.value }?.code == .cancelled)
    }

    @Test("shutdown(cancellingInFlight:) ends a leader's transfer and fails its joiners", arguments: [true, false])
    func shutdownEndsTheLeader(honours: Bool) async throws {
        let mock = Self.mock()
        mock.holdResponses()
        let transport: any HTTPTransport = honours ? mock : PlainTransport(mock: mock)
        let coordinator = RequestCoordinator(transport: transport)
        let leader = Task { try await Profile().load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let joiners = (0..<3).map { _ in Task { try await Profile().load(using: coordinator) } }
        #expect(await coordinator.waitForWaiters(4))
        await coordinator.shutdown(cancellingInFlight: true)  // returns once the transfer ended
        for load in [leader] + joiners {
            #expect(await serviceError { _ = try await load.value }?.code == .cancelled)
        }
        #expect(mock.requestCount == 1)
        #expect(mock.cancelledCount == 1)
    }

    @Test("shutdown(cancellingInFlight:) ends a leader that waits out a latency or a retry's delay")
    func shutdownEndsWaits() async throws {
        // A latency of a minute, on the transport's side.
        let slow = Self.mock()
        slow.setLatency(.seconds(60))
        let first = RequestCoordinator(transport: slow)
        let waiting = Task { try await Profile().load(using: first) }
        #expect(await slow.waitForRequests(1))
        let started = ContinuousClock.now
        await first.shutdown(cancellingInFlight: true)
        #expect(await serviceError { _ = try await waiting.value }?.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(30))

        // A 503 whose Retry-After asks for a minute, on the coordinator's side.
        let busy = MockTransport()
        busy.respond(to: .get, "/profile", with: [.serviceUnavailable(retryAfter: .seconds(60)), .json("{}")])
        var configuration = RequestCoordinator.Configuration()
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 2, maximumRetryAfter: .seconds(120))
        configuration.loadBudget = .seconds(120)  // room for the minute's pause
        let second = RequestCoordinator(transport: busy, configuration: configuration)
        let events = second.events()
        let retrying = Task { try await Profile().load(using: second) }
        for await event in events {
            if "\(event.kind)".hasPrefix("retried") { break }
        }
        let sleeping = ContinuousClock.now
        await second.shutdown(cancellingInFlight: true)
        #expect(await serviceError { _ = try await retrying.value }?.code == .cancelled)
        #expect(ContinuousClock.now - sleeping < .seconds(30))
        #expect(busy.requestCount == 1)
    }
}

@Suite("A load leads its transfer on its own task, over loopback")
struct LoopbackFlightLeaderTests {
    @Test(
        "cancelling the leader: the server sees its connection close and a second request; the joiners get its answer")
    func leaderHandsOverOverLoopback() async throws {
        try await withCoordinator { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "handover")
            let leader = Task { try await resource.load(using: coordinator) }
            #expect(await server.waitUntilHeld("handover", count: 1))
            let joiners = (0..<20).map { _ in Task { try await resource.load(using: coordinator) } }
            #expect(await coordinator.waitForWaiters(21))
            leader.cancel()
            #expect(await serviceError { _ = try await leader.value }?.code == .cancelled)
            #expect(await server.waitForClosedConnections(1))
            #expect(await server.waitUntilHeld("handover", count: 2))  // the joiner that took over
            server.openGate("handover")
            var values: [Gate] = []
            for joiner in joiners { values.append(try await joiner.value) }
            #expect(Set(values.map(\.served)).count == 1)  // one answer for all
            #expect(server.requests(to: "/gate").count == 2)
        }
    }

    @Test(
        "shutdown(cancellingInFlight:) ends a transfer its leader runs on its own task: the server sees the connection close"
    )
    func shutdownOverLoopback() async throws {
        try await withCoordinator { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "shutdown-leader")
            let loads = (0..<5).map { _ in Task { try await resource.load(using: coordinator) } }
            #expect(await coordinator.waitForWaiters(5))
            #expect(await server.waitUntilHeld("shutdown-leader", count: 1))
            await coordinator.shutdown(cancellingInFlight: true)
            for load in loads { #expect(await serviceError { _ = try await load.value }?.code == .cancelled) }
            #expect(await server.waitForClosedConnections(1))
            #expect(server.requests(to: "/gate").count == 1)
        }
    }
}
