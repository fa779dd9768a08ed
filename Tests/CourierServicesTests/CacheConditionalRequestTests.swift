import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("A caller's own conditional requests and the cache")
struct CacheConditionalRequestTests {
    @Test("a 304 answering the caller's If-None-Match is passed on, never stored as the response")
    func notModifiedIsNotStored() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let plain = RawCachedResource(
                baseURL: server.baseURL, key: "own-inm", query: ["cc": "max-age=600", "etag": "1"],
                acceptableStatus: 200..<400)
            var conditional = plain
            conditional.headers[.ifNoneMatch] = "\"v1\""
            let first = try await conditional.loadResponse(using: coordinator)
            #expect(first.response.status.code == 304 && first.source == .network && first.value.isEmpty)
            // A later unconditional GET gets the representation, not a stored 304 with no body.
            let second = try await plain.loadResponse(using: coordinator)
            #expect(second.response.status.code == 200 && second.source == .network && !second.value.isEmpty)
            #expect(server.cacheCounts("own-inm") == (2, 1))
            let third = try await plain.loadResponse(using: coordinator)
            #expect(third.response.status.code == 200 && third.source == .memory && third.value == second.value)
        }
    }

    @Test("a stored 304 or 206 (written by an older version) is removed, never served")
    func legacyEntries() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let cache = try #require(coordinator.configuration.cache)
            for (key, status) in [("legacy-304", HTTPResponse.Status.notModified), ("legacy-206", .partialContent)] {
                let request = HTTPRequest(
                    method: .get, scheme: "http", authority: String(server.baseURL.dropFirst("http://".count)),
                    path: "/cache?key=\(key)")
                let entry = CachedResponse(
                    status: status, headerFields: [.cacheControl: "max-age=600", .eTag: "\"v1\""], body: Data(),
                    requestTime: clock.now, responseTime: clock.now)
                await cache.store(entry, for: CacheKey(request: request, credentialHeaders: []), in: .all)
                let plain = RawCachedResource(baseURL: server.baseURL, key: key, query: [:])
                let loaded = try await plain.loadResponse(using: coordinator)
                #expect(loaded.source == .network && loaded.response.status.code == 200 && !loaded.value.isEmpty)
                #expect(server.requests(to: "/cache?key=\(key)").last?.header("If-None-Match") == nil)
            }
        }
    }

    @Test("the caller's conditions go to the server as sent, even with a fresh stored response")
    func conditionsReachTheServer() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let plain = RawCachedResource(
                baseURL: server.baseURL, key: "own-cond", query: ["cc": "max-age=600", "etag": "1"],
                acceptableStatus: 200..<400)
            let stored = try await plain.load(using: coordinator)
            var conditional = plain
            conditional.headers[.ifNoneMatch] = "\"v0\""
            let answered = try await conditional.loadResponse(using: coordinator)
            #expect(answered.source == .network && answered.response.status.code == 200)
            #expect(server.requests(to: "/cache?key=own-cond").last?.header("If-None-Match") == "\"v0\"")
            #expect(try await plain.loadResponse(using: coordinator).source == .memory)
            #expect(try await plain.load(using: coordinator).count == stored.count)
        }
    }
}
