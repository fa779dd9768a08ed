import CourierCore
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import Logging
import Testing

/// The caller's logger reaches the transport (async-http-client's per-request logger): a
/// transfer's redirect and failure lines carry the load's `courier.request.id`.
@Suite("Per-request logger in the transport")
struct TransportLoggingTests {
    @Test("a redirect's trace lines land on the caller's logger with its request id and metadata")
    func redirectTracesCarryTheRequestID() async throws {
        let store = CapturingLogHandler.Store()
        let backgroundStore = CapturingLogHandler.Store()
        var logger = Logger(label: "caller") { _ in CapturingLogHandler(store: store) }
        logger[metadataKey: "courier.test.caller"] = "ada"
        let background = Logger(label: "transport") { _ in CapturingLogHandler(store: backgroundStore) }
        let server = try await TestServer.start()
        let transport = CurlTransport(backgroundLogger: background)
        let coordinator = RequestCoordinator(transport: transport)
        let request = try HTTPRequest(method: .get, urlString: "\(server.baseURL)/redirect/2")
        _ = try await coordinator.send(request, logger: logger)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()

        let records = store.all
        let id = try #require(records.first { $0.message == "load started" }?.metadata["courier.request.id"])
        let redirects = records.filter { $0.message == "courier following redirect" }
        #expect(redirects.map { $0.metadata["courier.redirect.count"] } == ["1", "2"])
        #expect(redirects.allSatisfy { $0.level == .trace })
        #expect(
            redirects.allSatisfy {
                $0.metadata["courier.request.id"] == id && $0.metadata["courier.test.caller"] == "ada"
            })
        #expect(records.filter { $0.message == "courier transfer hop finished" }.count == 3)
        #expect(records.allSatisfy { $0.level <= .debug })
        // Only the shutdown line: nothing of the transfer went to the background logger.
        #expect(backgroundStore.all.map(\.message) == ["courier transport shutting down"])
    }

    @Test("two loads at once each log their redirects to their own logger")
    func concurrentLoadsKeepTheirLoggers() async throws {
        let first = CapturingLogHandler.Store()
        let second = CapturingLogHandler.Store()
        let firstLogger = Logger(label: "first") { _ in CapturingLogHandler(store: first) }
        let secondLogger = Logger(label: "second") { _ in CapturingLogHandler(store: second) }
        try await withCoordinator { server, coordinator in
            async let a = coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/redirect/1"), logger: firstLogger)
            async let b = coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/redirect/3"), logger: secondLogger)
            _ = try await (a, b)
        }
        for (store, count) in [(first, 1), (second, 3)] {
            let records = store.all
            let id = records.first { $0.message == "load started" }?.metadata["courier.request.id"]
            let redirects = records.filter { $0.message == "courier following redirect" }
            #expect(redirects.count == count)
            #expect(id != nil && redirects.allSatisfy { $0.metadata["courier.request.id"] == id })
        }
    }

    @Test("a failed transfer logs its error code at debug on the request's logger, and nothing above")
    func failedTransferLogsAtDebug() async throws {
        let store = CapturingLogHandler.Store()
        var logger = Logger(label: "caller") { _ in CapturingLogHandler(store: store) }
        logger[metadataKey: "courier.request.id"] = "7"
        let transport = CurlTransport()
        var options = TransferOptions()
        options.logger = logger
        let error = await serviceError {
            _ = try await transport.send(
                try HTTPRequest(method: .get, urlString: "http://127.0.0.1:1/"), body: nil, options: options)
        }
        await transport.shutdown()
        #expect(error?.code == .cannotConnect)
        let failed = store.all.filter { $0.message == "courier transfer failed" }
        #expect(failed.count == 1)
        #expect(failed.first?.level == .debug)
        #expect(failed.first?.metadata["courier.error.code"] == "cannotConnect")
        #expect(failed.first?.metadata["courier.request.id"] == "7")
    }

    @Test("a logger above debug receives nothing from a redirected load")
    func quietLoggerStaysQuiet() async throws {
        let store = CapturingLogHandler.Store()
        var logger = Logger(label: "caller") { _ in CapturingLogHandler(store: store) }
        logger.logLevel = .info
        try await withCoordinator { server, coordinator in
            _ = try await coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/redirect/2"), logger: logger)
        }
        #expect(store.all.isEmpty, "\(store.all.map(\.message))")
    }
}
