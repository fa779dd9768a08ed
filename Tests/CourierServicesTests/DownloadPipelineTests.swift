import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import InMemoryTracing
import Testing
import Tracing

/// Downloads go through the coordinator's pipeline: decorators, progress, events, tracing,
/// cancellation and shutdown.
@Suite("Download pipeline")
struct DownloadPipelineTests {
    @Test("a 401 refreshes the token and replays; only the accepted body reaches the file")
    func tokenRefresh() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("private.bin")
        let tokens = RefreshingTokens()
        var configuration = transferConfiguration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let resource = TransferResource(server, "/transfers/auth", ["valid": "new", "n": "300000"])
            let loaded = try await resource.download(to: path, using: coordinator).value
            #expect(loaded.value == DownloadedFile(path: path, size: 300_000))
            #expect(tokens.refreshes == 1)
            let sent = server.requests(to: "/transfers/auth").map { $0.header("Authorization") }
            #expect(sent == ["Bearer old", "Bearer new"])
            #expect(FileManager.default.contents(atPath: path) == patternBytes(300_000))
            #expect(directory.contents == ["private.bin"])
        }
    }

    @Test("progress moves forward only and ends at the size, also across a resume")
    func progress() async throws {
        let directory = try TransferDirectory()
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            for (name, query) in [("whole", [String: String]()), ("resumed", ["cutAt": "700000", "key": "progress"])] {
                let resource = TransferResource(server, "/transfers/file", query.merging(["n": "2000000"]) { $1 })
                let handle = coordinator.download(resource, to: directory.file(name))
                let collector = collectProgress(handle)
                _ = try await handle.value
                let values = await collector.value
                #expect(!values.isEmpty)
                #expect(zip(values, values.dropFirst()).allSatisfy { $0.bytesReceived < $1.bytesReceived })
                #expect(values.last?.bytesReceived == 2_000_000)
                #expect(values.last?.expectedBytesToReceive == 2_000_000)
            }
        }
    }

    @Test("a download reports started, retried and finished events and one client span")
    func eventsAndSpan() async throws {
        let directory = try TransferDirectory()
        let tracer = W3CTestTracer()
        var configuration = transferConfiguration()
        configuration.tracer = tracer
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let events = coordinator.events()
            let resource = TransferResource(
                server, "/transfers/file", ["n": "500000", "cutAt": "1000", "key": "events"])
            let loaded = try await coordinator.download(resource, to: directory.file("traced.bin")).value
            await coordinator.shutdown()
            var kinds: [String] = []
            for await event in events where event.requestID == loaded.requestID {
                kinds.append("\(event.kind)".prefix { $0 != "(" }.description)
            }
            #expect(kinds == ["started", "retried", "finished"])
            let spans = tracer.clientSpans.filter { $0.parentSpanID == nil }
            try #require(spans.count == 1)
            #expect(spans[0].operationName == "GET")
            #expect(spans[0].attributes.get("http.response.status_code") == .int64(206))
            #expect(spans[0].attributes.get("http.request.resend_count") == .int64(1))
            let sent = server.requests(to: "/transfers/file").last?.header("traceparent")
            #expect(sent != nil)
        }
    }

    @Test("cancelling mid-body: cancelled, no file at the destination, no temporary file")
    func cancellation() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("cancelled.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let handle = coordinator.download(TransferResource(server, "/transfers/held", ["name": "cancel"]), to: path)
            await waitForFirstBytes(handle)
            handle.cancel()
            let error = await serviceError { _ = try await handle.value }
            #expect(error?.code == .cancelled)
            #expect(directory.contents.isEmpty)
            server.openGate("cancel")
        }
    }

    @Test("shutdown(cancellingInFlight:) mid-download ends it with shutDown and leaves no file")
    func shutdownMidDownload() async throws {
        let directory = try TransferDirectory()
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let handle = coordinator.download(
                TransferResource(server, "/transfers/held", ["name": "shutdown"]), to: directory.file("stopped.bin"))
            await waitForFirstBytes(handle)
            await coordinator.shutdown(cancellingInFlight: true)
            let error = await serviceError { _ = try await handle.value }
            #expect(error?.code == .shutDown)
            #expect(directory.contents.isEmpty)
            server.openGate("shutdown")
        }
    }

    @Test("shutdown drains a download in flight: the file is in place when it returns")
    func drain() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("drained.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let held = TransferResource(server, "/transfers/held", ["name": "drain", "n": "200000"])
            let handle = coordinator.download(held, to: path)
            await waitForFirstBytes(handle)
            async let drained: Void = coordinator.shutdown()
            server.openGate("drain")
            await drained
            #expect(FileManager.default.contents(atPath: path) == patternBytes(200_000))
            let size = try await handle.value.value.size
            #expect(size == 200_000)
        }
    }

    @Test("any transport downloads through the default stream (a MockTransport here)")
    func mockTransport() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("mocked.bin")
        let mock = MockTransport()
        mock.respond(to: .get, "/file", with: .status(200, body: Data("mocked body".utf8)))
        let coordinator = RequestCoordinator(transport: mock)
        let resource = TransferResource.mock("/file")
        let loaded = try await coordinator.download(resource, to: path).value
        #expect(loaded.value.size == 11)
        #expect(FileManager.default.contents(atPath: path) == Data("mocked body".utf8))
        await coordinator.shutdown()
    }
}

extension TransferResource {
    static func mock(_ path: String) -> TransferResource {
        var resource = TransferResource(base: "http://mock.test", path: path)
        resource.retryPolicy = RetryPolicy.none
        return resource
    }

    init(base: String, path: String) {
        self.base = base
        self.path = path
    }
}
