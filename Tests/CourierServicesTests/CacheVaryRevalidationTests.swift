import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("A Vary miss revalidates the stored variant (RFC 9111, sections 4.3.1 and 4.3.4)")
struct CacheVaryRevalidationTests {
    func resource(_ server: TestServer, _ language: String) -> CachedResource {
        CachedResource(
            baseURL: server.baseURL, key: "vary-etag",
            query: ["cc": "max-age=600", "vary": "Accept-Language", "etag": "1"],
            headers: [.acceptLanguage: language])
    }

    @Test("If-None-Match with the stored variant's ETag; a 304 selects that variant for the new request")
    func notModifiedSelectsVariant() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            #expect(try await resource(server, "en").loadResponse(using: coordinator).value.lang == "en")
            let french = try await resource(server, "fr").loadResponse(using: coordinator)
            #expect(french.source == .revalidated && french.value.lang == "en" && french.value.served == 1)
            let sent = server.requests(to: "/cache?key=vary-etag").last
            #expect(sent?.header("If-None-Match") == "\"v1\"" && sent?.header("Accept-Language") == "fr")
            #expect(try await resource(server, "fr").loadResponse(using: coordinator).source == .memory)
            #expect(server.cacheCounts("vary-etag") == (2, 1))
        }
    }

    @Test("a 200 replaces the stored variant; without an ETag a Vary miss is a plain request")
    func changedVariant() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            _ = try await resource(server, "en").load(using: coordinator)
            server.setCacheVersion("vary-etag", 2)
            let german = try await resource(server, "de").loadResponse(using: coordinator)
            #expect(german.source == .network && german.value.lang == "de" && german.value.version == 2)
            #expect(try await resource(server, "de").loadResponse(using: coordinator).source == .memory)

            let untagged = CachedResource(
                baseURL: server.baseURL, key: "vary-plain", query: ["cc": "max-age=600", "vary": "Accept-Language"],
                headers: [.acceptLanguage: "en"])
            _ = try await untagged.load(using: coordinator)
            var french = untagged
            french.headers[.acceptLanguage] = "fr"
            #expect(try await french.loadResponse(using: coordinator).source == .network)
            #expect(server.requests(to: "/cache?key=vary-plain").last?.header("If-None-Match") == nil)
        }
    }
}
