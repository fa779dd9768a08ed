import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("Invalidation after unsafe methods (RFC 9111, section 4.4)")
struct CacheInvalidationTests {
    @Test("a successful POST invalidates its same-origin Location and Content-Location, not other origins")
    func locationAndContentLocation() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            func stored(_ key: String) -> RawCachedResource {
                RawCachedResource(
                    baseURL: server.baseURL, key: key, cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            }
            for key in ["inv-loc", "inv-cloc", "inv-rel", "inv-other"] {
                _ = try await stored(key).load(using: coordinator)
            }
            for key in ["inv-loc", "inv-cloc", "inv-rel", "inv-other"] {
                #expect(try await stored(key).loadResponse(using: coordinator).source == .memory)
            }
            let otherOrigin = server.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            var post = RawCachedResource(
                baseURL: server.baseURL, key: "inv-write",
                query: ["loc": server.baseURL + "/cache?key=inv-loc", "cloc": "/cache?key=inv-cloc"],
                cachePolicy: .networkOnly, method: .post)
            _ = try await post.load(using: coordinator)
            post.query = ["loc": "cache?key=inv-rel", "cloc": otherOrigin + "/cache?key=inv-other"]
            _ = try await post.load(using: coordinator)
            #expect(try await stored("inv-loc").loadResponse(using: coordinator).source == .network)
            #expect(try await stored("inv-cloc").loadResponse(using: coordinator).source == .network)
            #expect(try await stored("inv-rel").loadResponse(using: coordinator).source == .network)
            #expect(try await stored("inv-other").loadResponse(using: coordinator).source == .memory)
        }
    }

    @Test("a POST that fails invalidates nothing")
    func failureKeepsEntries() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "inv-fail", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            _ = try await resource.load(using: coordinator)
            server.failCacheKey("inv-fail", status: 500)
            var post = resource
            post.method = .post
            post.cachePolicy = .networkOnly
            #expect(await serviceError { _ = try await post.load(using: coordinator) }?.status?.code == 500)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
        }
    }
}
