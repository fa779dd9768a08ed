import CourierOpenAPI
import CourierServices
import CourierTestServer
import CourierTesting
import CourierTransport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// Which responses stream through a `CourierClientTransport`, and what streaming keeps:
/// chunks as they arrive, retries before the head, early release, `ServiceError`s.
@Suite("Generated client, streamed bodies")
struct StreamedBodyTests {
    @Test("a large binary download streams: read once, in chunks, never held whole")
    func largeDownloadStreams() async throws {
        try await withClient { _, _, client in
            let count = 4 << 20
            let body = try await client.downloadFile(path: .init(name: "blob-\(count)")).ok.body.binary
            // A buffered body can be read again; a streamed one only once.
            #expect(body.iterationBehavior == .single)
            #expect(body.length == .known(Int64(count)))
            var chunks = 0
            var offset = 0
            var largest = 0
            var matches = true
            for try await chunk in body {
                chunks += 1
                largest = max(largest, chunk.count)
                matches = Payloads.isPattern(Array(chunk), from: offset)
                offset += chunk.count
                if !matches { break }
            }
            #expect(matches)
            #expect(offset == count)
            // Delivered as it arrived: many chunks, none near the whole body.
            #expect(chunks > 8)
            #expect(largest <= count / 8)
        }
    }

    @Test("a cached or coalescable GET stays buffered; streamedOperations streams a GET that accepts JSON")
    func choicePerOperation() async throws {
        var cached = CourierClientTransport.Configuration()
        cached.cachePolicies["downloadFile"] = .cacheElseNetwork(maxAge: .seconds(60))
        cached.streamedOperations = ["getItem"]
        try await withClient(transport: cached) { _, _, client in
            let download = try await client.downloadFile(path: .init(name: "blob-1000")).ok.body.binary
            #expect(download.iterationBehavior == .multiple)
            let item = try await client.getItem(path: .init(itemID: "s1")).ok.body.json
            #expect(item.id == "s1")
        }
        let plain = CourierClientTransport.Configuration()
        var get = HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/")
        get.headerFields[.accept] = "application/json"
        #expect(!plain.streamsResponse(of: get, operationID: "getItem"))
        #expect(cached.streamsResponse(of: get, operationID: "getItem"))
        get.headerFields[.accept] = "application/octet-stream"
        #expect(plain.streamsResponse(of: get, operationID: "downloadFile"))
        #expect(!cached.streamsResponse(of: get, operationID: "downloadFile"))
        let post = HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/")
        #expect(plain.streamsResponse(of: post, operationID: "createItem"))
    }

    @Test("an upload of a large body reaches the server whole; the declared answer streams back")
    func largeUpload() async throws {
        try await withClient { server, _, client in
            let name = String(repeating: "n", count: 4 << 20)
            // The server parses only a prefix of a body this large, so it declares it refused;
            // it counts every byte it received.
            let refused = try await client.createItem(body: .json(.init(name: name, price: 1)))
            #expect(try refused.badRequest.body.json.message == "an item needs a name")
            let sent = try #require(server.requests(to: "/openapi/items").first { $0.method == "POST" })
            #expect(sent.bodyLength > 4 << 20)
        }
    }

    @Test("a client that lets a streamed body go early stops the transfer: shutdown does not wait for it")
    func earlyRelease() async throws {
        try await withClient { _, coordinator, client in
            let count = 8 << 20
            var read = 0
            do {
                let body = try await client.downloadFile(path: .init(name: "blob-\(count)")).ok.body.binary
                for try await chunk in body {
                    read += chunk.count
                    break
                }
            }
            #expect(read > 0 && read < count)
            await coordinator.shutdown()
            let error = await underlyingServiceError { _ = try await client.downloadFile(path: .init(name: "blob-1")) }
            #expect(error?.code == .shutDown)
        }
    }

    @Test("a 503 with Retry-After before the head is retried for a streamed download")
    func retriedBeforeHead() async throws {
        let clock = ImmediateTestClock()
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = clock
        try await withClient(configuration: configuration) { server, _, client in
            let body = try await client.downloadFile(path: .init(name: "flaky-d1-5000")).ok.body.binary
            #expect(body.iterationBehavior == .single)
            let bytes = try await [UInt8](collecting: body, upTo: 1 << 20)
            #expect(bytes.count == 5000)
            #expect(Payloads.isPattern(bytes))
            #expect(server.requests(to: "/openapi/files/flaky-d1-5000").count == 3)
            #expect(clock.sleeps == [.seconds(1), .seconds(1)])
        }
    }

    @Test("a streamed operation that cannot connect fails with ClientError wrapping ServiceError")
    func streamedFailure() async throws {
        let server = try await TestServer.start()
        let url = try #require(URL(string: "\(server.baseURL)/openapi"))
        await server.stop()
        var configuration = RequestCoordinator.Configuration()
        configuration.retryPolicy = .none
        let curl = CurlTransport()
        let coordinator = RequestCoordinator(transport: curl, configuration: configuration)
        let client = Client(serverURL: url, transport: CourierClientTransport(coordinator: coordinator))
        let error = await underlyingServiceError { _ = try await client.downloadFile(path: .init(name: "blob-10")) }
        #expect(error?.code == .cannotConnect)
        await coordinator.shutdown()
        await curl.shutdown()
    }
}
