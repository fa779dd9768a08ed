import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@Suite("Freshness fields as servers really send them (RFC 9111, sections 4.2.1 and 5.3)")
struct CacheFieldParsingTests {
    @Test(
        "an Expires in none of the three HTTP date forms means already expired; GMT in any case is fine",
        arguments: [
            ("Sun, 06 Nov 2050 08:49:37 GMT", true), ("Sun, 06 Nov 2050 08:49:37 gmt", true),
            ("Sun 06 Nov 2050 08:49:37 GMT", false), ("Sun,  06 Nov 2050 08:49:37 GMT", false),
            ("Sun, 06-Nov-2050 08:49:37 GMT", false), ("Sun, 06 Nov 2050 8:49:37 GMT", false),
        ])
    func expires(value: String, fresh: Bool) async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "exp-\(value)", query: ["expires": value])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == (fresh ? .memory : .network))
        }
    }

    @Test(
        "max-age with spaces around = or a decimal is stale; of two values the first counts",
        arguments: [
            ("max-age=600", true), ("max-age=600, max-age=600", true), ("max-age = 600", false),
            ("max-age= 600", false), ("max-age=600.5", false), ("max-age=600a", false),
            ("max-age=600, max-age=0", true), ("max-age=0, max-age=600", false),
        ])
    func maxAge(value: String, fresh: Bool) async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "ma-\(value)", query: ["cc": value])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == (fresh ? .memory : .network))
        }
    }

    @Test(
        "must-understand: no-store yields for a status whose rules the cache implements, never for another",
        arguments: [(200, true), (404, true), (599, false)])
    func mustUnderstand(status: Int, stored: Bool) async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            var resource = RawCachedResource(
                baseURL: server.baseURL, key: "mu-\(status)",
                query: ["cc": "max-age=3600, no-store, must-understand", "status": "\(status)"])
            resource.acceptableStatus = 200..<600
            resource.cacheableStatus = .http
            _ = try await resource.loadResponse(using: coordinator)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.response.status.code == status)
            #expect(second.source == (stored ? .memory : .network))
        }
    }

    @Test("fields named in Connection, and hop-by-hop fields, are not stored")
    func connectionFields() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "hop", query: ["cc": "max-age=600", "hop": "1"])
            let hop = HTTPField.Name("X-Hop")!
            let first = try await resource.loadResponse(using: coordinator)
            #expect(first.source == .network && first.response.headerFields[hop] == "yes")
            let cached = try await resource.loadResponse(using: coordinator)
            #expect(cached.source == .memory)
            #expect(cached.response.headerFields[hop] == nil && cached.response.headerFields[.connection] == nil)
            #expect(cached.response.headerFields[.contentType] == "application/json")
        }
    }

    @Test("a qualified no-cache: served from the cache without the fields it names")
    func qualifiedNoCache() async throws {
        let transport = MockTransport()
        transport.respond(
            to: .get, "/cache",
            with: .json(
                "{}",
                headers: [
                    .cacheControl: #"max-age=600, no-cache="Set-Cookie""#, .setCookie: "sid=1; Path=/",
                    .eTag: "\"v1\"",
                ]))
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache()
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        let resource = RawCachedResource(baseURL: "http://api.test", key: "qualified")
        let first = try await resource.loadResponse(using: coordinator)
        #expect(first.source == .network && first.response.headerFields[.setCookie] == "sid=1; Path=/")
        let cached = try await resource.loadResponse(using: coordinator)
        #expect(cached.source == .memory && cached.response.headerFields[.setCookie] == nil)
        #expect(cached.response.headerFields[.eTag] == "\"v1\"")
        #expect(transport.requestCount == 1)
        await coordinator.shutdown()
    }
}
