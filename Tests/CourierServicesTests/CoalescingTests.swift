import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

@Suite("Coalescing")
struct CoalescingTests {
    struct Profile: Resource {
        typealias Response = Gate
        var token: String? = nil
        var coalescing: Coalescing = .automatic
        var method: HTTPRequest.Method = .get
        var endpoint: Endpoint { Endpoint("http://mock.test", path: "/profile") }
        var headers: HTTPFields {
            var fields = HTTPFields()
            if let token { fields[.authorization] = "Bearer \(token)" }
            return fields
        }
    }

    func mock() -> MockTransport {
        let mock = MockTransport()
        mock.respond(to: .get, "/profile") { request, _ in
            .json(#"{"gate":"\#(request.headerFields[.authorization] ?? "none")","served":1}"#)
        }
        mock.respond(to: .post, "/profile", with: .json(#"{"gate":"post","served":1}"#))
        return mock
    }

    @Test("1,000 concurrent identical loads make one transfer and give 1,000 results")
    func thousandShareOne() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let values = try await withThrowingTaskGroup(of: Loaded<Gate>.self) { group in
            for _ in 0..<1_000 { group.addTask { try await Profile(token: "a").loadResponse(using: coordinator) } }
            await coordinator.waitForWaiters(1_000)
            mock.releaseResponses()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(mock.requestCount == 1)
        #expect(values.count == 1_000)
        #expect(values.allSatisfy { $0.value == Gate(gate: "Bearer a", served: 1) })
        #expect(values.filter { !$0.wasCoalesced }.count == 1)
    }

    @Test("different credentials never share a transfer")
    func credentialsSeparate() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        async let alice = Profile(token: "alice").load(using: coordinator)
        async let bob = Profile(token: "bob").load(using: coordinator)
        async let alice2 = Profile(token: "alice").load(using: coordinator)
        await coordinator.waitForWaiters(3)
        mock.releaseResponses()
        let (a, b, a2) = try await (alice, bob, alice2)
        #expect(a.gate == "Bearer alice" && a2.gate == "Bearer alice")
        #expect(b.gate == "Bearer bob")
        #expect(mock.requestCount == 2)
    }

    @Test("POST does not coalesce unless the resource opts in")
    func unsafeMethods() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        async let one = Profile(method: .post).load(using: coordinator)
        async let two = Profile(method: .post).load(using: coordinator)
        #expect(await mock.waitForRequests(2))
        async let three = Profile(coalescing: .always, method: .post).load(using: coordinator)
        async let four = Profile(coalescing: .always, method: .post).load(using: coordinator)
        await coordinator.waitForWaiters(4)
        mock.releaseResponses()
        _ = try await (one, two, three, four)
        #expect(mock.requestCount == 3)
    }

    @Test("rejectDuplicates fails the second identical load with redundantRequest")
    func rejectDuplicates() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        async let first = Profile(coalescing: .rejectDuplicates).load(using: coordinator)
        await coordinator.waitForWaiters(1)
        let error = await serviceError { _ = try await Profile(coalescing: .rejectDuplicates).load(using: coordinator) }
        #expect(error?.code == .redundantRequest)
        mock.releaseResponses()
        _ = try await first
        #expect(mock.requestCount == 1)
    }

    @Test("cancelling 999 of 1,000 waiters leaves the last one its value")
    func cancelMostWaiters() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let survivor = Task { try await Profile(token: "s").load(using: coordinator) }
        await coordinator.waitForWaiters(1)
        let others = (0..<999).map { _ in Task { try await Profile(token: "s").load(using: coordinator) } }
        await coordinator.waitForWaiters(1_000)
        for task in others { task.cancel() }
        for task in others {
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .cancelled)
        }
        #expect(await coordinator.waiterCount == 1)
        mock.releaseResponses()
        #expect(try await survivor.value.gate == "Bearer s")
        #expect(mock.cancelledCount == 0)
    }

    @Test("cancelling every waiter cancels the transfer")
    func cancelAllWaiters() async throws {
        let mock = mock()
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let tasks = (0..<10).map { _ in Task { try await Profile().load(using: coordinator) } }
        await coordinator.waitForWaiters(10)
        #expect(await mock.waitForRequests(1))
        for task in tasks { task.cancel() }
        for task in tasks {
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .cancelled)
        }
        await coordinator.shutdown()  // drains: returns once the transfer's task has ended
        #expect(mock.cancelledCount == 1)
    }

    @Test("the coalescing key tells credentials and bodies apart, and ignores tracing headers")
    func keyDigest() throws {
        func key(_ auth: String, body: String? = nil, trace: String = "1") -> FlightKey? {
            var request = HTTPRequest(method: .get, scheme: "https", authority: "a.test", path: "/x")
            request.headerFields[.authorization] = auth
            request.headerFields[HTTPField.Name("traceparent")!] = trace
            return FlightKey(
                request, body: body.map { .string($0) },
                ignoring: RequestCoordinator.Configuration().headersIgnoredForCoalescing)
        }
        #expect(key("Bearer a") == key("Bearer a", trace: "2"))
        #expect(key("Bearer a") != key("Bearer b"))
        #expect(key("Bearer a", body: "1") != key("Bearer a", body: "2"))
        #expect(
            FlightKey(
                HTTPRequest(method: .post, scheme: "https", authority: "a.test", path: "/x"),
                body: .file(atPath: "/tmp/x"), ignoring: []) == nil)
    }
}

@Suite("Coalescing over loopback")
struct LoopbackCoalescingTests {
    @Test("1,000 identical loads against the server: one request, 1,000 results")
    func thousandOverLoopback() async throws {
        try await withCoordinator { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "thousand")
            let values = try await withThrowingTaskGroup(of: Gate.self) { group in
                for _ in 0..<1_000 { group.addTask { try await resource.load(using: coordinator) } }
                await coordinator.waitForWaiters(1_000)
                server.openGate("thousand")
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(values.count == 1_000)
            #expect(values.allSatisfy { $0 == Gate(gate: "thousand", served: 1) })
            #expect(server.requests(to: "/gate").count == 1)
        }
    }

    @Test("different credentials make separate requests to the server")
    func credentialsOverLoopback() async throws {
        try await withCoordinator { server, coordinator in
            var alice = GateResource(baseURL: server.baseURL, name: "creds")
            alice.headers[.authorization] = "Bearer alice"
            var bob = alice
            bob.headers[.authorization] = "Bearer bob"
            async let a = alice.load(using: coordinator)
            async let b = bob.load(using: coordinator)
            await coordinator.waitForWaiters(2)
            #expect(await server.waitUntilHeld("creds", count: 2))
            server.openGate("creds")
            _ = try await (a, b)
            let auths = Set(server.requests(to: "/gate").compactMap { $0.header("Authorization") })
            #expect(auths == ["Bearer alice", "Bearer bob"])
        }
    }

    @Test("cancelling every waiter cancels the transfer: the server sees the connection close")
    func cancelAllOverLoopback() async throws {
        try await withCoordinator { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "never")
            let tasks = (0..<20).map { _ in Task { try await resource.load(using: coordinator) } }
            await coordinator.waitForWaiters(20)
            #expect(await server.waitUntilHeld("never", count: 1))
            for task in tasks { task.cancel() }
            for task in tasks { #expect(await serviceError { _ = try await task.value }?.code == .cancelled) }
            #expect(await server.waitForClosedConnections(1))
            #expect(server.snapshot.connectionsOpen == 0)
        }
    }
}
