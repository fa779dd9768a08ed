import CourierServices
import CourierTestServer
import Foundation
import Testing

/// The services layer over HTTP/2: a coordinator load through `CurlTransport` to nginx
/// (TLS with a test certificate authority, ALPN h2).
@Suite struct HTTP2LoadTests {
    struct Greeting: Decodable, Sendable, Equatable {
        var name: String
        /// The protocol nginx served the request with (`$server_protocol`).
        var `protocol`: String
    }

    struct GreetingResource: Resource {
        typealias Response = Greeting
        let base: String
        var endpoint: Endpoint { Endpoint(base, path: "/json") }
    }

    @Test func aCoordinatorLoadDecodesAResponseServedOverHTTP2() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let transport = CurlTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.transferOptions.tls.certificateAuthorityFile = server.certificateAuthorityFile
        configuration.coalescesDuplicateLoads = false
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        let resource = GreetingResource(base: "https://\(server.authority)")

        let loaded = try await resource.loadResponse(using: coordinator)
        #expect(loaded.value == Greeting(name: "courier", protocol: "HTTP/2.0"))
        #expect(loaded.metrics.httpVersion == "2")
        #expect(loaded.source == .network)

        // Concurrent loads through the coordinator share the connection the first one opened.
        let more = try await withThrowingTaskGroup(of: Loaded<Greeting>.self) { group in
            for _ in 0..<10 { group.addTask { try await resource.loadResponse(using: coordinator) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(more.allSatisfy { $0.value.protocol == "HTTP/2.0" && $0.metrics.newConnections == 0 })
        #expect(Set(more.map(\.metrics.localPort)) == [loaded.metrics.localPort])
        await coordinator.shutdown()
        await transport.shutdown()
    }

    struct HelloEvents: Resource {
        typealias Response = Void
        let base: String
        var endpoint: Endpoint { Endpoint(base, path: "/events") }
    }

    @Test func serverSentEventsStreamOverHTTP2() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let transport = CurlTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.transferOptions.tls.certificateAuthorityFile = server.certificateAuthorityFile
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        var events: [ServerSentEvent] = []
        for try await event in coordinator.events(
            HelloEvents(base: "https://\(server.authority)"), reconnection: .never)
        {
            events.append(event)
        }
        #expect(events == [ServerSentEvent(event: "hello", data: "HTTP/2.0", id: "7")])
        await coordinator.shutdown()
        await transport.shutdown()
    }
}
