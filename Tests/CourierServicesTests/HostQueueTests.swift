import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

/// `Configuration.maximumLoadsPerHost`: loads of one host beyond the limit wait for their turn
/// before they start, in order; others never wait.
@Suite("Loads wait for their turn at a busy host")
struct HostQueueTests {
    struct Item: Resource {
        typealias Response = Data
        var base = "http://mock.test"
        var id: Int
        var timeout: Duration? = nil
        var cachePolicy: CachePolicy = .networkOnly
        var decorators: [any RequestDecorator] = []
        var endpoint: Endpoint { Endpoint(base, path: "/item/\(id)") }
    }

    /// Fetches a token through the same coordinator and host before each request, as a token
    /// provider that logs in through the API it authorizes would. Its load has a total timeout,
    /// which only a wait for a turn at the host enforces here (the mock has no clock).
    struct FetchingDecorator: RequestDecorator {
        let coordinator: RequestCoordinator
        var timeout: Duration? = nil
        func decorate(_ request: inout HTTPRequest) async throws {
            let token = try await Item(id: 100, timeout: timeout).load(using: coordinator)
            request.headerFields[.authorization] = "Bearer \(token.count)"
        }
    }

    /// Returns true once `condition` holds, false after a minute (a slow machine under a
    /// sanitizer takes tens of seconds to schedule a test).
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
        return condition()
    }

    static func coordinator(limit: Int) -> (MockTransport, RequestCoordinator) {
        let mock = MockTransport()
        mock.respond(to: .get, "/item*", with: .json(#"{"ok":true}"#))
        mock.holdResponses()
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = limit
        return (mock, RequestCoordinator(transport: mock, configuration: configuration))
    }

    /// Returns true once `count` loads wait for their turn, false after a minute.
    static func waitForTurnWaiters(_ count: Int, in coordinator: RequestCoordinator) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while (coordinator.hostQueue?.waiterCount ?? 0) < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
        return coordinator.hostQueue?.waiterCount == count
    }

    @Test("beyond the limit, loads wait before they reach the transport, and go in the order they came")
    func limitAndOrder() async throws {
        let (mock, coordinator) = Self.coordinator(limit: 1)
        var loads: [Task<Data, any Error>] = []
        for id in 0..<5 {
            loads.append(Task { try await Item(id: id).load(using: coordinator) })
            // One at a time, so that the order they queue in is known.
            if id == 0 {
                #expect(await mock.waitForRequests(1))
            } else {
                #expect(await Self.waitForTurnWaiters(id, in: coordinator))
            }
        }
        #expect(mock.requestCount == 1)
        while mock.requestCount < 5 {
            let seen = mock.requestCount
            mock.releaseResponses()
            mock.holdResponses()
            #expect(await mock.waitForRequests(seen + 1))
        }
        mock.releaseResponses()
        for load in loads { _ = try await load.value }
        #expect(mock.requests.compactMap(\.request.path) == (0..<5).map { "/item/\($0)" })
        #expect(coordinator.hostQueue?.isIdle == true)
    }

    @Test("a decorator that loads through the same host while its load holds the last place does not wait for it")
    func decoratorLoadsDoNotWait() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item*", with: .json(#"{"ok":true}"#))
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = 1
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration)
        // Were the decorator's load to wait for the place its own load holds, its timeout would
        // end that wait with `timedOut` and fail the load: a failure, never a hang. Nothing else
        // here runs on a clock, so a slow machine cannot fail it.
        let decorator = FetchingDecorator(coordinator: coordinator, timeout: .seconds(5))
        _ = try await Item(id: 1, decorators: [decorator]).load(using: coordinator)
        #expect(mock.requests.compactMap(\.request.path) == ["/item/100", "/item/1"])
        #expect(coordinator.hostQueue?.isIdle == true)
    }

    @Test(
        "another host's loads, identical loads (they join), cache reads and a limit of 0 never wait; a POST waits like a GET"
    )
    func whoNeverWaits() async throws {
        let (mock, coordinator) = Self.coordinator(limit: 1)
        mock.respond(to: .post, "/item*", with: .json(#"{"ok":true}"#))
        let first = Task { try await Item(id: 1).load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let queued = Task { try await Item(id: 2).load(using: coordinator) }
        #expect(await Self.waitForTurnWaiters(1, in: coordinator))
        let otherHost = Task { try await Item(base: "http://other.test", id: 3).load(using: coordinator) }
        #expect(await mock.waitForRequests(2))
        let joiner = Task { try await Item(id: 1).load(using: coordinator) }
        #expect(await coordinator.waitForWaiters(4))  // the leaders, the joiner and the queued load
        let cacheRead = Task {
            try await Item(id: 4, cachePolicy: .cacheElseNetwork(maxAge: .seconds(60))).load(using: coordinator)
        }
        #expect(await mock.waitForRequests(3))
        var post = try HTTPRequest(method: .post, urlString: "http://mock.test/item/5")
        post.headerFields[.contentType] = "application/json"
        let posted = Task { try await coordinator.send(post, body: .bytes(Data("{}".utf8))) }
        #expect(await Self.waitForTurnWaiters(2, in: coordinator))  // the queued GET and the POST
        mock.releaseResponses()
        for load in [first, queued, otherHost, joiner, cacheRead] { _ = try await load.value }
        _ = try await posted.value
        #expect(mock.requestCount == 5)
        #expect(coordinator.hostQueue?.isIdle == true)

        let (unlimited, open) = Self.coordinator(limit: 0)
        #expect(open.hostQueue == nil)
        let loads = (0..<5).map { id in Task { try await Item(id: id).load(using: open) } }
        #expect(await unlimited.waitForRequests(5))
        unlimited.releaseResponses()
        for load in loads { _ = try await load.value }
    }

    @Test(
        "a waiting load fails with cancelled when cancelled, timedOut when its timeout runs out, shutDown at shutdown; the others keep their place"
    )
    func waitingLoadsEnd() async throws {
        let (mock, coordinator) = Self.coordinator(limit: 1)
        let first = Task { try await Item(id: 0).load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let cancelled = Task { try await Item(id: 1).load(using: coordinator) }
        #expect(await Self.waitForTurnWaiters(1, in: coordinator))
        let kept = Task { try await Item(id: 2).load(using: coordinator) }
        #expect(await Self.waitForTurnWaiters(2, in: coordinator))
        cancelled.cancel()
        #expect(await serviceError { _ = try await cancelled.value }?.code == .cancelled)
        let started = ContinuousClock.now
        let timedOut = await serviceError {
            _ = try await Item(id: 3, timeout: .milliseconds(200)).load(using: coordinator)
        }
        #expect(timedOut?.code == .timedOut)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(coordinator.hostQueue?.waiterCount == 1)
        mock.releaseResponses()
        _ = try await first.value
        _ = try await kept.value
        #expect(mock.requests.compactMap(\.request.path) == ["/item/0", "/item/2"])
        #expect(coordinator.hostQueue?.isIdle == true)

        // A graceful shutdown lets the running load finish, but not the waiting one start.
        mock.holdResponses()
        let running = Task { try await Item(id: 4).load(using: coordinator) }
        #expect(await mock.waitForRequests(3))
        let waiting = Task { try await Item(id: 5).load(using: coordinator) }
        #expect(await Self.waitForTurnWaiters(1, in: coordinator))
        let shutdown = Task { await coordinator.shutdown() }
        #expect(await Self.eventually { coordinator.hostQueue?.waiterCount == 0 })
        #expect(await serviceError { _ = try await waiting.value }?.code == .shutDown)
        #expect(mock.requestCount == 3)
        mock.releaseResponses()
        _ = try await running.value
        await shutdown.value
        #expect(coordinator.hostQueue?.isIdle == true)
    }

    /// Forwards to a `MockTransport` and records each request's total timeout.
    struct TimeoutRecorder: HTTPTransport {
        let mock: MockTransport
        let timeouts = LockedValue<[String: [Duration?]]>([:])
        /// When each request reached the transport.
        let sentAt = LockedValue<[String: [ContinuousClock.Instant]]>([:])
        func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
            -> TransportResponse
        {
            timeouts.withLock { $0[request.path ?? "", default: []].append(options.timeout) }
            sentAt.withLock { $0[request.path ?? "", default: []].append(.now) }
            return try await mock.send(request, body: body, options: options)
        }
    }

    @Test("a load that waited starts with what its total timeout has left; its retries get the whole timeout")
    func waitCountsAgainstTheTimeout() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item*", with: .json(#"{"ok":true}"#))
        // The later route wins.
        mock.respond(to: .get, "/item/1", with: [.serviceUnavailable(retryAfter: .zero), .json(#"{"ok":true}"#)])
        mock.holdResponses()
        let recorder = TimeoutRecorder(mock: mock)
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = 1
        let coordinator = RequestCoordinator(transport: recorder, configuration: configuration)
        let first = Task { try await Item(id: 0, timeout: .seconds(30)).load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let loadStarted = ContinuousClock.now
        let waited = Task { try await Item(id: 1, timeout: .seconds(30)).load(using: coordinator) }
        #expect(await Self.waitForTurnWaiters(1, in: coordinator))
        try await Task.sleep(for: .milliseconds(500))
        mock.releaseResponses()
        _ = try await first.value
        _ = try await waited.value
        let timeouts = recorder.timeouts.withLock { $0 }
        #expect(timeouts["/item/0"] == [.seconds(30)])
        let attempts = try #require(timeouts["/item/1"])
        try #require(attempts.count == 2)
        let left = try #require(attempts[0])
        // It waited at least the 500 ms pause, and at most until it reached the transport (which
        // took over 10 s once, in a loaded sanitized run).
        let sent = try #require(recorder.sentAt.withLock { $0["/item/1"]?.first })
        #expect(left <= .milliseconds(29_500))
        let reached = sent - loadStarted
        #expect(left >= .seconds(30) - reached, "\(left), reached the transport after \(reached)")
        #expect(attempts[1] == .seconds(30))
    }
}

@Suite("The host queue itself")
struct HostQueueUnitTests {
    static func host(_ name: String) -> HostQueue.Host {
        HostQueue.Host(HTTPRequest(method: .get, scheme: "http", authority: name, path: "/"))
    }

    @Test("idle lines are dropped once there are many: a crawl over 1,000 hosts keeps a bounded table")
    func idleLinesDropped() {
        let queue = HostQueue(limit: 2)
        for index in 0..<1_000 {
            let host = Self.host("host-\(index).test")
            #expect(queue.enterIfRoom(host))
            queue.leave(host)
        }
        #expect(queue.lineCount <= 64)
        #expect(queue.isIdle)
    }

    @Test(
        "a line whose places are held long, with thousands of waits that time out: its list of turns stays short; a held place survives the idle lines being dropped"
    )
    func withdrawnTicketsDoNotPileUp() async {
        let queue = HostQueue(limit: 1)
        let busy = Self.host("busy.test")
        #expect(queue.enterIfRoom(busy))
        // Waits that queue, then time out on their timers.
        let outcomes = await withTaskGroup(of: HostQueue.Refusal?.self) { group in
            for _ in 0..<3_000 { group.addTask { await queue.enter(busy, deadline: .now + .milliseconds(50)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 3_000 && outcomes.allSatisfy { $0 == .timedOut })
        #expect(queue.queuedTickets(of: busy) == 0)
        for index in 0..<1_000 {
            let host = Self.host("other-\(index).test")
            #expect(queue.enterIfRoom(host))
            queue.leave(host)
        }
        #expect(!queue.enterIfRoom(busy))  // its place is still held
        queue.leave(busy)
        #expect(queue.isIdle)
    }

    @Test("waiters cancelled at random while places are given back: each ends once, the rest get in, nothing leaks")
    func cancellationAgainstLeave() async {
        let queue = HostQueue(limit: 4)
        let host = Self.host("busy.test")
        for _ in 0..<4 { #expect(queue.enterIfRoom(host)) }
        let outcomes = await withTaskGroup(of: HostQueue.Refusal?.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let waiter = Task { await queue.enter(host, deadline: nil) }
                    if index % 3 == 0 {
                        await Task.yield()
                        waiter.cancel()
                    }
                    let refusal = await waiter.value
                    if refusal == nil {
                        await Task.yield()
                        queue.leave(host)
                    }
                    return refusal
                }
            }
            // Give the first four places back while the waiters come and go.
            for _ in 0..<4 {
                await Task.yield()
                queue.leave(host)
            }
            var outcomes: [HostQueue.Refusal?] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.count == 200)
        #expect(outcomes.allSatisfy { $0 == nil || $0 == .cancelled })
        #expect(outcomes.filter { $0 == nil }.count >= 200 - 67)
        #expect(queue.isIdle)
    }
}

@Suite("Loads wait for their turn at a busy host, over loopback")
struct LoopbackHostQueueTests {
    @Test("with a limit of 2, the server never holds more than 2 of 6 loads, and every load succeeds")
    func limitOverLoopback() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = 2
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = GateResource(baseURL: server.baseURL, name: "host-limit", coalescing: .never)
            let loads = (0..<6).map { _ in Task { try await resource.load(using: coordinator) } }
            #expect(await server.waitUntilHeld("host-limit", count: 2))
            #expect(await HostQueueTests.waitForTurnWaiters(4, in: coordinator))
            var released = 0
            while released < 6 {
                #expect(await server.waitUntilHeld("host-limit", count: min(2, 6 - released)))
                released += server.releaseHeld("host-limit")
            }
            for load in loads { _ = try await load.value }
            #expect(server.gateCounts("host-limit") == (mostHeld: 2, served: 6))
        }
    }
}
