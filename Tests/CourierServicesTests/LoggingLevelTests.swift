import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Logging
import Testing

/// Logging as async-http-client's design asks: `courier.*` keys, nothing at `.info` or above
/// for loads that fail the way loads do, and work that outlives a load on the background logger.
@Suite("Logging levels and loggers")
struct LoggingLevelTests {
    @Test("a 404, a refused connection and a success log at debug or below, with courier.* keys only")
    func nothingAboveDebug() async throws {
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "caller") { _ in CapturingLogHandler(store: store) }
        try await withCoordinator { server, coordinator in
            _ = try await coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json"), logger: logger)
            let missing = try await coordinator.load(Data.self, from: "\(server.baseURL)/status/404", logger: logger)
                .value.count
            Issue.record("a 404 loaded \(missing) bytes")
        } catch: { error in
            #expect(error.code == .unacceptableStatus)
        }
        var options = RequestCoordinator.Configuration()
        options.retryPolicy = .none
        let coordinator = RequestCoordinator(transport: CurlTransport(), configuration: options)
        _ = await serviceError {
            _ = try await coordinator.send(
                try HTTPRequest(method: .get, urlString: "http://127.0.0.1:1/"), logger: logger)
        }
        await coordinator.shutdown()
        let records = store.all
        #expect(
            records.contains {
                $0.message == "load failed" && $0.metadata["courier.error.code"] == "unacceptableStatus"
            })
        #expect(
            records.contains { $0.message == "load failed" && $0.metadata["courier.error.code"] == "cannotConnect" })
        #expect(records.allSatisfy { $0.level <= .debug }, "\(records.filter { $0.level > .debug }.map(\.message))")
        #expect(records.allSatisfy { $0.metadata.keys.allSatisfy { $0.hasPrefix("courier.") } })
    }

    @Test("a stale-while-revalidate refresh logs to the background logger, not the caller's", .timeLimit(.minutes(1)))
    func backgroundRefreshLogsInTheBackground() async throws {
        let callerStore = CapturingLogHandler.Store()
        let backgroundStore = CapturingLogHandler.Store()
        let caller = Logger(label: "caller") { _ in CapturingLogHandler(store: callerStore) }
        let background = Logger(label: "background") { _ in CapturingLogHandler(store: backgroundStore) }
        let server = try await TestServer.start()
        let clock = WallClock()
        var configuration = RequestCoordinator.Configuration()
        configuration.now = { clock.now }
        configuration.cache = TieredCache(memory: .init(), store: nil, now: { clock.now })
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(
            transport: transport, configuration: configuration, backgroundLogger: background)
        let resource = CachedResource(
            baseURL: server.baseURL, key: "swr-log",
            query: ["cc": "max-age=1, stale-while-revalidate=300", "date": "none"])
        _ = try await resource.load(using: coordinator, logger: caller)
        clock.advance(10)
        let events = coordinator.events()
        let stale = try await resource.loadResponse(using: coordinator, logger: caller)
        #expect(stale.isStale)
        // The refresh is a load of its own: wait until it has ended (a failed refresh ends the
        // wait too, and fails the expectations below instead of waiting for the time limit).
        for await event in events {
            let name = event.kind.name
            if name == .finished || name == .failed, event.requestID != stale.requestID { break }
        }
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
        let refreshID = callerStore.all.first { $0.message.hasPrefix("serving stale") }?.metadata["courier.refresh.id"]
        #expect(refreshID != nil)
        #expect(!callerStore.all.contains { $0.metadata["courier.request.id"] == refreshID })
        #expect(
            backgroundStore.all.contains {
                $0.message == "load finished" && $0.metadata["courier.request.id"] == refreshID
            }, "\(backgroundStore.all.map { "\($0.message) \($0.metadata)" }) refresh \(String(describing: refreshID))")
        // The transport's lines for the refresh go there too (both loggers log at trace): the
        // caller's logger saw one transfer, its first load's.
        let hop = "courier transfer hop finished"
        #expect(backgroundStore.all.contains { $0.message == hop && $0.metadata["courier.request.id"] == refreshID })
        #expect(callerStore.all.filter { $0.message == hop }.count == 1)
    }
}

/// Runs `body` with a coordinator over a fresh server, handing a `ServiceError` it throws to
/// `handle` (the coordinator and server are shut down either way).
private func withCoordinator(
    _ body: (TestServer, RequestCoordinator) async throws -> Void, catch handle: (ServiceError) -> Void
) async throws {
    do {
        try await withCoordinator(configuration: .init(), body)
    } catch let error as ServiceError {
        handle(error)
    }
}
