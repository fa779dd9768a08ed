import CourierOpenAPI
import CourierServices
import CourierTestServer
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// The generated client (`Generated/`, from `openapi.yaml`) through a `CourierClientTransport`,
/// against the loopback server: typed outputs, declared errors, bodies both ways.
@Suite("Generated client")
struct GeneratedClientTests {
    @Test("a GET with path and query parameters decodes the typed 200")
    func typedSuccess() async throws {
        try await withClient { server, _, client in
            let output = try await client.getItem(
                path: .init(itemID: "a b/7"), query: .init(locale: "fr-CH", tags: ["new", "x&y"]))
            let item = try output.ok.body.json
            #expect(item.id == "a b/7")
            #expect(item.name == "Item a b/7")
            #expect(item.locale == "fr-CH")
            #expect(item.tags == ["new", "x&y"])
            // Path and query reach the server as the runtime encoded them, under the base path.
            let uri = try #require(server.requests(to: "/openapi/items/").first?.uri)
            #expect(uri == "/openapi/items/a%20b%2F7?locale=fr-CH&tags=new&tags=x%26y")
        }
    }

    @Test("a declared 404 comes back as the typed notFound output, not an error")
    func declaredError() async throws {
        try await withClient { _, _, client in
            let output = try await client.getItem(path: .init(itemID: "missing-1"))
            guard case .notFound(let notFound) = output else {
                Issue.record("expected notFound, got \(output)")
                return
            }
            #expect(try notFound.body.json.message == "no item missing-1")
        }
    }

    @Test("a POST sends its JSON body and decodes 201; a refused body decodes the declared 400")
    func postJSON() async throws {
        try await withClient { server, _, client in
            let created = try await client.createItem(body: .json(.init(name: "lamp", price: 42)))
            let item = try created.created.body.json
            #expect(item == .init(id: "new", name: "lamp", price: 42))
            let sent = try #require(server.requests(to: "/openapi/items").first { $0.method == "POST" })
            #expect(sent.header("Content-Type") == "application/json; charset=utf-8")
            #expect(sent.bodyLength > 0)

            let refused = try await client.createItem(body: .json(.init(name: "")))
            #expect(try refused.badRequest.body.json.message == "an item needs a name")
        }
    }

    @Test("a binary download arrives whole and byte for byte")
    func binaryDownload() async throws {
        try await withClient { _, _, client in
            let count = (1 << 20) + 17
            let output = try await client.downloadFile(path: .init(name: "blob-\(count)"))
            let body = try output.ok.body.binary
            let bytes = try await [UInt8](collecting: body, upTo: 8 << 20)
            #expect(bytes.count == count)
            #expect(Payloads.isPattern(bytes))
            #expect(body.length == .known(Int64(count)))
        }
    }

    @Test("a failed transfer is a ClientError whose underlyingError is the ServiceError")
    func transportFailure() async throws {
        let refusing = try RefusingPort()  // bound, never listening: connections are refused
        let url = try #require(URL(string: "\(refusing.baseURL)/openapi"))
        var configuration = RequestCoordinator.Configuration()
        configuration.retryPolicy = .none
        let curl = CurlTransport()
        let coordinator = RequestCoordinator(transport: curl, configuration: configuration)
        let client = Client(serverURL: url, transport: CourierClientTransport(coordinator: coordinator))
        let error = await underlyingServiceError { _ = try await client.getItem(path: .init(itemID: "1")) }
        #expect(error?.code == .cannotConnect)
        await coordinator.shutdown()
        await curl.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test("a request body over the limit fails with invalidRequest before anything is sent")
    func requestBodyLimit() async throws {
        var limits = CourierClientTransport.Configuration()
        limits.maximumRequestBodySize = 16
        try await withClient(transport: limits) { server, _, client in
            let error = await underlyingServiceError {
                _ = try await client.createItem(body: .json(.init(name: String(repeating: "n", count: 64))))
            }
            #expect(error?.code == .invalidRequest)
            #expect(server.requests(to: "/openapi/items").isEmpty)
        }
    }

    @Test("a server URL that is not http(s) fails with invalidRequest")
    func badServerURL() async throws {
        let curl = CurlTransport()
        let coordinator = RequestCoordinator(transport: curl)
        let client = Client(
            serverURL: try #require(URL(string: "ftp://127.0.0.1/openapi")),
            transport: CourierClientTransport(coordinator: coordinator))
        let error = await underlyingServiceError { _ = try await client.getItem(path: .init(itemID: "1")) }
        #expect(error?.code == .invalidRequest)
        await coordinator.shutdown()
        await curl.shutdown()
    }

    @Test("a default cache policy covers the operations not named, and a named policy overrides it")
    func defaultCachePolicy() async throws {
        var transport = CourierClientTransport.Configuration()
        transport.defaultCachePolicy = .cacheElseNetwork(maxAge: .seconds(300))
        transport.cachePolicies["downloadFile"] = .networkOnly
        try await withClient(transport: transport) { server, _, client in
            let first = try await client.getItem(path: .init(itemID: "d1")).ok.body.json
            let again = try await client.getItem(path: .init(itemID: "d1")).ok.body.json
            #expect(again == first)
            #expect(server.requests(to: "/openapi/items/d1").count == 1)
            for _ in 0..<2 { _ = try await client.downloadFile(path: .init(name: "blob-10")).ok }
            #expect(server.requests(to: "/openapi/files/blob-10").count == 2)
        }
    }
}
