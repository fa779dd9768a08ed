import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("Caching a rejected status apart from accepting it (CacheableStatus)")
struct CacheableStatusTests {
    @Test("with .http a 404 is stored and fails again from the cache; by default it is asked every time")
    func storesNotFound() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            for (key, statuses) in [("nf-http", CacheableStatus.http), ("nf-default", .accepted)] {
                server.failCacheKey(key, status: 404)
                server.setCacheControl(key, "max-age=600")
                let resource = RawCachedResource(baseURL: server.baseURL, key: key, cacheableStatus: statuses)
                for _ in 0..<2 {
                    let error = await serviceError { _ = try await resource.load(using: coordinator) }
                    #expect(error?.code == .unacceptableStatus && error?.status?.code == 404)
                }
            }
            #expect(server.cacheCounts("nf-http").requests == 1)
            #expect(server.cacheCounts("nf-default").requests == 2)
        }
    }

    @Test(".including stores only the statuses it names")
    func including() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            for (key, status) in [("inc-410", 410), ("inc-404", 404)] {
                server.failCacheKey(key, status: status)
                server.setCacheControl(key, "max-age=600")
                let resource = RawCachedResource(baseURL: server.baseURL, key: key, cacheableStatus: .including([410]))
                for _ in 0..<2 { _ = await serviceError { _ = try await resource.load(using: coordinator) } }
            }
            #expect(server.cacheCounts("inc-410").requests == 1)
            #expect(server.cacheCounts("inc-404").requests == 2)
        }
    }

    @Test("stale-if-error still answers a 503, which is never stored, with .http")
    func staleIfErrorStillApplies() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            server.setCacheControl("nf-sie", "max-age=1, stale-if-error=300")
            let resource = RawCachedResource(baseURL: server.baseURL, key: "nf-sie", cacheableStatus: .http)
            let stored = try await resource.load(using: coordinator)
            clock.advance(10)
            server.failCacheKey("nf-sie", status: 503)
            for _ in 0..<2 {
                let failing = try await resource.loadResponse(using: coordinator)
                #expect(failing.value == stored && failing.isStale && failing.networkError?.status?.code == 503)
            }
            // A 404 (storable) then replaces the stale 200 and fails from the cache.
            server.failCacheKey("nf-sie", status: 404)
            server.setCacheControl("nf-sie", "max-age=600")
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 404)
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 404)
            #expect(server.cacheCounts("nf-sie").requests == 4)
        }
    }
}
