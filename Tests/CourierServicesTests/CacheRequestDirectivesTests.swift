import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("The caller's Cache-Control directives (RFC 9111, section 5.2.1)")
struct CacheRequestDirectivesTests {
    @Test("max-age=N refuses a stored response older than N seconds")
    func maxAge() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = RawCachedResource(baseURL: server.baseURL, key: "rq-maxage", query: ["cc": "max-age=600"])
            _ = try await resource.load(using: coordinator)
            clock.advance(100)
            #expect(try await resource.directive("max-age=200").loadResponse(using: coordinator).source == .memory)
            #expect(try await resource.directive("max-age=60").loadResponse(using: coordinator).source == .network)
            #expect(server.cacheCounts("rq-maxage").requests == 2)
        }
    }

    @Test("min-fresh=N refuses a response fresh for less than N more seconds")
    func minFresh() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = RawCachedResource(baseURL: server.baseURL, key: "rq-minfresh", query: ["cc": "max-age=600"])
            _ = try await resource.load(using: coordinator)
            clock.advance(100)
            #expect(try await resource.directive("min-fresh=100").loadResponse(using: coordinator).source == .memory)
            #expect(try await resource.directive("min-fresh=550").loadResponse(using: coordinator).source == .network)
        }
    }

    @Test("max-stale accepts a stale response within its limit (any, without one), never past must-revalidate")
    func maxStale() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "rq-maxstale", query: ["cc": "max-age=10", "etag": "1"])
            _ = try await resource.load(using: coordinator)
            clock.advance(40)
            let within = try await resource.directive("max-stale=60").loadResponse(using: coordinator)
            #expect(within.source == .memory && within.isStale)
            #expect(try await resource.directive("max-stale").loadResponse(using: coordinator).source == .memory)
            #expect(
                try await resource.directive("max-stale=10").loadResponse(using: coordinator).source == .revalidated)
            #expect(server.cacheCounts("rq-maxstale") == (2, 1))

            let strict = RawCachedResource(
                baseURL: server.baseURL, key: "rq-maxstale-mr",
                query: ["cc": "max-age=10, must-revalidate", "etag": "1"])
            _ = try await strict.load(using: coordinator)
            clock.advance(40)
            #expect(try await strict.directive("max-stale").loadResponse(using: coordinator).source == .revalidated)
        }
    }

    @Test("max-stale accepts a stale response without validators, kept a day past its freshness")
    func maxStaleWithoutValidators() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "rq-maxstale-nv", query: ["cc": "max-age=10"])
            _ = try await resource.load(using: coordinator)
            clock.advance(3_600)
            let stale = try await resource.directive("max-stale").loadResponse(using: coordinator)
            #expect(stale.source == .memory && stale.isStale)
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
            clock.advance(86_400 + 11)
            #expect(try await resource.directive("max-stale").loadResponse(using: coordinator).source == .network)
            #expect(server.cacheCounts("rq-maxstale-nv").requests == 3)
        }
    }

    @Test("no-cache revalidates a fresh stored response; no-store stores nothing")
    func noCacheAndNoStore() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "rq-nocache", query: ["cc": "max-age=600", "etag": "1"])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.directive("no-cache").loadResponse(using: coordinator).source == .revalidated)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)

            let unstored = RawCachedResource(baseURL: server.baseURL, key: "rq-nostore", query: ["cc": "max-age=600"])
            _ = try await unstored.directive("no-store").load(using: coordinator)
            #expect(try await unstored.loadResponse(using: coordinator).source == .network)
        }
    }

    @Test("no-store is not answered from the cache, even when a fresh response is stored, and leaves it stored")
    func noStoreIsNotAnsweredFromTheCache() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "rq-nostore-fresh", query: ["cc": "max-age=600", "etag": "1"])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.directive("no-store").loadResponse(using: coordinator).source == .network)
            #expect(server.cacheCounts("rq-nostore-fresh") == (2, 0))
            // The stored response still answers a plain request.
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
        }
    }

    @Test("only-if-cached: the stored response, else cacheMiss without a request, whatever the policy")
    func onlyIfCached() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "rq-oic", query: ["cc": "max-age=60", "etag": "1"])
            let missing = await serviceError {
                _ = try await resource.directive("only-if-cached").load(using: coordinator)
            }
            #expect(missing?.code == .cacheMiss)
            #expect(missing?.status == .gatewayTimeout, "the HTTP form: an HTTP cache answers 504")
            #expect(server.cacheCounts("rq-oic").requests == 0)
            let stored = try await resource.load(using: coordinator)
            let cached = try await resource.directive("only-if-cached").loadResponse(using: coordinator)
            #expect(cached.source == .memory && cached.value == stored)
            clock.advance(120)
            let stale = await serviceError {
                _ = try await resource.directive("only-if-cached").load(using: coordinator)
            }
            #expect(stale?.code == .cacheMiss)
            let staleAllowed = try await resource.directive("only-if-cached, max-stale").loadResponse(
                using: coordinator)
            #expect(staleAllowed.source == .memory && staleAllowed.isStale)
            var networkOnly = resource.directive("only-if-cached")
            networkOnly.cachePolicy = .networkOnly
            let unread = await serviceError { _ = try await networkOnly.load(using: coordinator) }
            #expect(unread?.code == .cacheMiss && unread?.status == .gatewayTimeout)
            #expect(server.cacheCounts("rq-oic").requests == 1)
        }
    }
}
