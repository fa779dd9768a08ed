import CourierServices
import CourierTestServer
import Foundation
import Testing

/// Server-sent events through the coordinator, against the test server's `/events` route.
@Suite("Event streams")
struct EventStreamTests {
    struct Tick: Decodable, Equatable { var n: Int }

    /// Reads every event until the stream ends.
    private func collect(_ stream: EventStream) async throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for try await event in stream { events.append(event) }
        return events
    }

    /// A task reading `stream` to its end, returned once it has read three events.
    private func readingThreeEvents(of stream: EventStream) async -> Task<Void, any Error> {
        let firstThree = AsyncStream<Void>.makeStream()
        let reader = Task {
            var count = 0
            for try await _ in stream {
                count += 1
                if count == 3 { firstThree.continuation.yield() }
            }
        }
        for await _ in firstThree.stream { break }
        return reader
    }

    @Test("events arrive typed and decode; the request asks for an event stream; a 204 ends it")
    func typedEvents() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let resource = TransferResource(
                server, "/events", ["key": "typed", "connections": "1", "type": "text/event-stream; charset=utf-8"])
            let events = try await collect(coordinator.events(resource))
            #expect(events.map(\.event) == ["tick", "tick", "tick"])
            #expect(events.map(\.id) == ["1", "2", "3"])
            #expect(try events.map { try $0.decode(Tick.self) } == [Tick(n: 1), Tick(n: 2), Tick(n: 3)])
            let requests = server.requests(to: "/events")
            #expect(requests.count == 2)
            #expect(requests.first?.header("Accept") == "text/event-stream")
            #expect(requests.first?.header("Last-Event-ID") == nil)
            #expect(requests.last?.header("Last-Event-ID") == "3")
        }
    }

    @Test("a dropped connection reconnects with the last whole event's ID after the server's retry delay")
    func reconnectsAfterCut() async throws {
        let configuration = transferConfiguration()
        let clock = try #require(configuration.clock as? RecordingClock)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = TransferResource(
                server, "/events", ["key": "cut", "then": "cut", "retry": "50", "connections": "2", "partial": "1"])
            let events = try await collect(resource.events(using: coordinator))
            #expect(events.map(\.id) == ["1", "2", "3", "4", "5", "6"])
            #expect(events.allSatisfy { $0.retry == nil })
            #expect(server.requests(to: "/events").map { $0.header("Last-Event-ID") } == [nil, "3", "6"])
            #expect(clock.sleeps == [.milliseconds(50), .milliseconds(50)])
        }
    }

    @Test("without a retry field the configured delay applies; lastEventID resumes a stored stream")
    func configuredDelayAndResume() async throws {
        let configuration = transferConfiguration()
        let clock = try #require(configuration.clock as? RecordingClock)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            var stream = coordinator.events(
                TransferResource(server, "/events", ["key": "resume", "count": "2", "connections": "2"]),
                reconnection: EventStream.Reconnection(delay: .milliseconds(700)))
            stream.lastEventID = "41"
            let events = try await collect(stream)
            #expect(events.map(\.id) == ["42", "43", "44", "45"])
            #expect(clock.sleeps == [.milliseconds(700), .milliseconds(700)])
        }
    }

    @Test("a stream reconnects as .standard says unless told otherwise: 3 s without a retry field")
    func standardReconnection() async throws {
        let configuration = transferConfiguration()
        let clock = try #require(configuration.clock as? RecordingClock)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let stream = coordinator.events(
                TransferResource(server, "/events", ["key": "standard", "count": "2", "connections": "2"]))
            #expect(stream.reconnection == .standard)
            let events = try await collect(stream)
            #expect(events.count == 4)
            #expect(clock.sleeps == [.seconds(3), .seconds(3)])
        }
    }

    @Test("a status the resource refuses, or another content type, fails without reconnecting")
    func refusals() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let missing = await serviceError {
                _ = try await collect(coordinator.events(TransferResource(server, "/events", ["status": "1:404"])))
            }
            #expect(missing?.code == .unacceptableStatus)
            let plain = await serviceError {
                _ = try await collect(
                    coordinator.events(TransferResource(server, "/events", ["key": "plain", "type": "text/plain"])))
            }
            #expect(plain?.code == .malformedResponse)
            #expect(server.requests(to: "/events").count == 2)
        }
    }

    @Test("a 503 past the resource's retries reconnects like a dropped connection")
    func unavailableReconnects() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            var resource = TransferResource(server, "/events", ["key": "busy", "status": "2:503", "connections": "3"])
            resource.retryPolicy = RetryPolicy(maximumAttempts: 1)
            let events = try await collect(coordinator.events(resource))
            #expect(events.map(\.id) == ["1", "2", "3"])
            #expect(server.requests(to: "/events").count == 4)
        }
    }

    @Test("fruitless reconnections are bounded by maximumAttempts; .never makes one connection")
    func boundedReconnections() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let empty = TransferResource(server, "/events", ["key": "empty", "count": "0"])
            let none = try await collect(
                coordinator.events(empty, reconnection: EventStream.Reconnection(delay: .zero, maximumAttempts: 2)))
            #expect(none.isEmpty)
            #expect(server.requests(to: "/events").count == 3)
            let once = try await collect(
                coordinator.events(TransferResource(server, "/events", ["key": "once"]), reconnection: .never))
            #expect(once.count == 3)
            #expect(server.requests(to: "/events").count == 4)
        }
    }

    @Test("an event over maximumEventSize fails with responseTooLarge, after the events before it")
    func oversizedEvent() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            var stream = coordinator.events(
                TransferResource(server, "/events", ["key": "huge", "huge": "8000"]), reconnection: .never)
            stream.maximumEventSize = 4096
            var events: [ServerSentEvent] = []
            let error = await serviceError { for try await event in stream { events.append(event) } }
            #expect(error?.code == .responseTooLarge)
            #expect(events.map(\.id) == ["1", "2", "3"])
            #expect(server.requests(to: "/events").count == 1)
        }
    }

    @Test("every connection goes through the decorators: a rejected token is refreshed, then the stream reads")
    func tokenRefresh() async throws {
        let tokens = RefreshingTokens()
        var configuration = transferConfiguration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let events = try await collect(
                coordinator.events(
                    TransferResource(server, "/events", ["key": "auth", "token": "new", "connections": "1"])))
            #expect(events.count == 3)
            #expect(tokens.refreshes == 1)
            #expect(
                server.requests(to: "/events").map { $0.header("Authorization") } == [
                    "Bearer old", "Bearer new", "Bearer new",
                ])
        }
    }

    @Test("cancelling the reader ends the stream with cancelled, without reconnecting")
    func cancellation() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let stream = coordinator.events(TransferResource(server, "/events", ["key": "held", "then": "hold"]))
            let reader = await readingThreeEvents(of: stream)
            reader.cancel()
            let error = await serviceError { _ = try await reader.value }
            #expect(error?.code == .cancelled)
            #expect(server.requests(to: "/events").count == 1)
            server.openGate("held")
        }
    }

    @Test("a coordinator shutdown cancelling what is in flight ends an open stream with shutDown")
    func shutdown() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let stream = coordinator.events(TransferResource(server, "/events", ["key": "stop", "then": "hold"]))
            var iterator = stream.makeAsyncIterator()
            for _ in 0..<3 { _ = try await iterator.next() }
            await coordinator.shutdown(cancellingInFlight: true)
            let error = await serviceError { _ = try await iterator.next() }
            #expect(error?.code == .shutDown)
            server.openGate("stop")
        }
    }

    @Test(
        "a graceful shutdown does not wait for an open event stream: it ends it with shutDown",
        .timeLimit(.minutes(1)))
    func gracefulShutdown() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let stream = coordinator.events(TransferResource(server, "/events", ["key": "graceful", "then": "hold"]))
            var iterator = stream.makeAsyncIterator()
            for _ in 0..<3 { _ = try await iterator.next() }
            await coordinator.shutdown()
            let error = await serviceError { _ = try await iterator.next() }
            #expect(error?.code == .shutDown)
            server.openGate("graceful")
        }
    }

    @Test("cancelling the reader while it waits to reconnect ends the stream with cancelled")
    func cancelledWhileWaiting() async throws {
        try await withCoordinator { server, coordinator in
            let stream = coordinator.events(
                TransferResource(server, "/events", ["key": "waiting"]),
                reconnection: EventStream.Reconnection(delay: .seconds(60)))
            let reader = await readingThreeEvents(of: stream)
            let started = ContinuousClock.now
            reader.cancel()
            let error = await serviceError { try await reader.value }
            #expect(error?.code == .cancelled)
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(server.requests(to: "/events").count == 1)
        }
    }
}
