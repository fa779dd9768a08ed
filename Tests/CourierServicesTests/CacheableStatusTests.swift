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

    @Test(".http stores a server error only with explicit freshness (or a 501), and reuses it only while fresh")
    func serverErrors() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            // (key, status, Cache-Control, CacheableStatus, requests after two loads)
            let cases: [(String, Int, String?, CacheableStatus, Int)] = [
                ("se-503-fresh", 503, "max-age=60", .http, 1),
                ("se-500-bare", 500, nil, .http, 2),
                ("se-500-no-freshness", 500, "no-transform", .http, 2),
                ("se-501-heuristic", 501, nil, .http, 1),
                ("se-501-bare", 501, nil, .http, 2),  // no Last-Modified: no heuristic freshness
                ("se-503-max-age-0", 503, "max-age=0", .http, 2),
                ("se-503-including", 503, "max-age=60", .including([503]), 2),
                ("se-503-default", 503, "max-age=60", .accepted, 2),
            ]
            for (key, status, control, statuses, _) in cases {
                server.failCacheKey(key, status: status)
                if let control { server.setCacheControl(key, control) }
                // Last-Modified a day back: heuristic freshness for a status that allows it.
                let resource = RawCachedResource(
                    baseURL: server.baseURL, key: key, query: key.hasSuffix("-bare") ? [:] : ["lm": "1"],
                    cacheableStatus: statuses)
                for _ in 0..<2 {
                    let error = await serviceError { _ = try await resource.load(using: coordinator) }
                    #expect(error?.code == .unacceptableStatus && error?.status?.code == status, "\(key)")
                }
            }
            for (key, _, _, _, requests) in cases {
                #expect(server.cacheCounts(key).requests == requests, "\(key)")
            }
            // Once stale, the stored 503 is not reused: the next load asks the server.
            clock.advance(61)
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "se-503-fresh", query: ["lm": "1"], cacheableStatus: .http)
            _ = await serviceError { _ = try await resource.load(using: coordinator) }
            #expect(server.cacheCounts("se-503-fresh").requests == 2)
        }
    }

    @Test("a fresh 503 that stale-if-error answers with the stored response is not stored in its place")
    func serverErrorBehindStaleIfError() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = try await Self.staleThen503(
                "se-sie", failureControl: "max-age=600", server: server, coordinator: coordinator, clock: clock)
            #expect(server.cacheCounts("se-sie").requests == 3)
            // updates() gets the failure after the stored value; the 503 does not replace it.
            do { for try await _ in resource.updates(using: coordinator) {} } catch {}
            let after = try await resource.loadResponse(using: coordinator)
            #expect(after.isStale && after.networkError?.status?.code == 503)
            #expect(server.cacheCounts("se-sie").requests == 5)
            // Past stale-if-error, the fresh 503 is stored and answers the next load.
            clock.advance(400)
            for _ in 0..<2 {
                #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 503)
            }
            #expect(server.cacheCounts("se-sie").requests == 6)
        }
    }

    @Test("stale-if-error still answers a 503 with .http")
    func staleIfErrorStillApplies() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = try await Self.staleThen503(
                "nf-sie", failureControl: nil, server: server, coordinator: coordinator, clock: clock)
            // A 404 (storable) then replaces the stale 200 and fails from the cache.
            server.failCacheKey("nf-sie", status: 404)
            server.setCacheControl("nf-sie", "max-age=600")
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 404)
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 404)
            #expect(server.cacheCounts("nf-sie").requests == 4)
        }
    }

    /// Stores `key`'s answer (`max-age=1, stale-if-error=300`), then, 10 s later, makes the
    /// server answer 503 (with `failureControl` as its `Cache-Control`) and checks that two
    /// loads get the stale value, saying so; returns the resource.
    static func staleThen503(
        _ key: String, failureControl: String?, server: TestServer, coordinator: RequestCoordinator,
        clock: WallClock
    ) async throws -> RawCachedResource {
        server.setCacheControl(key, "max-age=1, stale-if-error=300")
        let resource = RawCachedResource(baseURL: server.baseURL, key: key, cacheableStatus: .http)
        let stored = try await resource.load(using: coordinator)
        clock.advance(10)
        server.failCacheKey(key, status: 503)
        if let failureControl { server.setCacheControl(key, failureControl) }
        for _ in 0..<2 {
            let failing = try await resource.loadResponse(using: coordinator)
            #expect(failing.value == stored && failing.isStale && failing.networkError?.status?.code == 503)
        }
        return resource
    }
}
