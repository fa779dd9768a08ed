import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// What `/cache` answers.
struct Versioned: Codable, Sendable, Equatable {
    var key: String
    var version: Int
    var served: Int
    var lang: String
}

/// A resource over `/cache` with the caching headers given in `query`.
struct CachedResource: Resource {
    typealias Response = Versioned
    var baseURL: String
    var key: String
    var query: [String: String] = [:]
    var cachePolicy: CachePolicy = .http()
    var headers: HTTPFields = [:]
    var method: HTTPRequest.Method = .get
    var decorators: [any RequestDecorator] = []
    var retryPolicy: RetryPolicy? = RetryPolicy.none
    var endpoint: Endpoint {
        Endpoint.cacheRoute(baseURL, key: key, query: query)
    }
}

/// A settable wall clock for the coordinator and its cache.
final class WallClock: Sendable {
    private let current = LockedValue(Date())
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

/// A coordinator whose cache and freshness run on `clock`, over a fresh server.
func withCachingCoordinator<T>(
    store: (any CacheStore)? = nil, memory: MemoryCache<CacheKey, CachedResponse>.Limits = .init(),
    _ body: (TestServer, RequestCoordinator, WallClock) async throws -> T
) async throws -> T {
    let clock = WallClock()
    var configuration = RequestCoordinator.Configuration()
    configuration.now = { clock.now }
    configuration.cache = TieredCache(memory: memory, store: store, now: { clock.now })
    return try await withCoordinator(configuration: configuration) { server, coordinator in
        try await body(server, coordinator, clock)
    }
}

@Suite("Caching through the coordinator")
struct CachingTests {
    @Test("a policy collapsing across the fleet carries its wait and lease; others carry none")
    func fleetCollapsingOfAPolicy() {
        let policy = CachePolicy.http().collapsingAcrossFleet(wait: .seconds(2), lease: .seconds(8))
        #expect(policy.fleetCollapsing == FleetCollapsing(wait: .seconds(2), lease: .seconds(8)))
        #expect(CachePolicy.http().fleetCollapsing == nil)
    }

    @Test("cacheElseNetwork: stored, served from memory, back to the network after maxAge")
    func cacheElseNetwork() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "cen", cachePolicy: .cacheElseNetwork(maxAge: .seconds(60)))
            let first = try await resource.loadResponse(using: coordinator)
            #expect(first.source == .network && first.value.served == 1)
            clock.advance(59)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.source == .memory && second.value == first.value && !second.isStale)
            #expect(second.metrics.total == .zero)
            #expect(!first.source.isCache && second.source.isCache)
            clock.advance(1)
            let third = try await resource.loadResponse(using: coordinator)
            #expect(third.source == .network && third.value.served == 2)
            #expect(server.cacheCounts("cen").requests == 2)
        }
    }

    @Test("cacheOnly: a miss is cacheMiss; a stored value is served without a request")
    func cacheOnly() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let only = CachedResource(baseURL: server.baseURL, key: "only", cachePolicy: .cacheOnly())
            let error = await serviceError { _ = try await only.load(using: coordinator) }
            #expect(error?.code == .cacheMiss)
            var filler = only
            filler.cachePolicy = .networkElseCache()
            _ = try await filler.load(using: coordinator)
            #expect(try await only.load(using: coordinator).served == 1)
            #expect(server.cacheCounts("only").requests == 1)
        }
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let only = CachedResource(baseURL: server.baseURL, key: "nocache", cachePolicy: .cacheOnly())
            #expect(await serviceError { _ = try await only.load(using: coordinator) }?.code == .cacheMiss)
        }
    }

    @Test(
        "a gzipped response: the network load reports what was decoded; the cache serves the decoded body and reports nothing"
    )
    func decodedEncodingIsReported() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "gz", query: ["cc": "max-age=600", "gzip": "1"],
                cachePolicy: .http())
            let network = try await resource.loadResponse(using: coordinator)
            #expect(network.source == .network)
            #expect(network.metrics.decodedContentEncoding == "gzip")
            #expect(network.response.headerFields[.contentEncoding] == nil)
            let cached = try await resource.loadResponse(using: coordinator)
            #expect(cached.source == .memory)
            #expect(cached.value == network.value)
            #expect(cached.metrics.decodedContentEncoding == "")
        }
    }

    @Test("networkOnly stores nothing")
    func networkOnly() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "no", query: ["cc": "max-age=600"], cachePolicy: .networkOnly)
            _ = try await resource.load(using: coordinator)
            let cached = CachedResource(
                baseURL: server.baseURL, key: "no", query: ["cc": "max-age=600"], cachePolicy: .cacheOnly())
            #expect(await serviceError { _ = try await cached.load(using: coordinator) }?.code == .cacheMiss)
        }
    }

    @Test("networkElseCache: the network while it answers; offline, the stored value and the error")
    func networkElseCache() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "nec", cachePolicy: .networkElseCache())
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
            let online = try await resource.loadResponse(using: coordinator)
            #expect(online.source == .network && online.value.served == 2)
            await server.stop()
            let offline = try await resource.loadResponse(using: coordinator)
            #expect(offline.source == .memory && offline.value.served == 2)
            #expect(offline.networkError?.code == .cannotConnect)
            let other = CachedResource(baseURL: server.baseURL, key: "never-loaded", cachePolicy: .networkElseCache())
            #expect(await serviceError { _ = try await other.load(using: coordinator) }?.code == .cannotConnect)
        }
    }

    @Test("networkElseCache: a token refresh that fails offline serves the value stored for that token")
    func decoratorFailureFallsBackToCache() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let tokens = OfflineTokens()
            let decorator = BearerTokenDecorator(tokens: tokens)
            let resource = CachedResource(
                baseURL: server.baseURL, key: "token", cachePolicy: .networkElseCache(), decorators: [decorator])
            let online = try await resource.load(using: coordinator)
            // The server now rejects the token, and the refresh cannot reach its server.
            server.failCacheKey("token", status: 401)
            let offline = try await resource.loadResponse(using: coordinator)
            #expect(offline.value == online)
            #expect(offline.networkError?.code == .decorationFailed)
            #expect(tokens.refreshes == 1)
            // Another user's token is another partition: nothing of the first user's is served.
            let stranger = CachedResource(
                baseURL: server.baseURL, key: "token", cachePolicy: .networkElseCache(),
                headers: [.authorization: "Bearer someone-else"])
            #expect(await serviceError { _ = try await stranger.load(using: coordinator) }?.code == .unacceptableStatus)
        }
    }

    @Test("credentials partition the cache: one user's entry is never served to another")
    func credentialPartitions() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            func resource(_ user: String) -> CachedResource {
                CachedResource(
                    baseURL: server.baseURL, key: "users", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)),
                    headers: [.authorization: "Bearer \(user)"])
            }
            let alice = try await resource("alice").load(using: coordinator)
            let bob = try await resource("bob").load(using: coordinator)
            #expect(alice.served == 1 && bob.served == 2)
            #expect(try await resource("alice").load(using: coordinator) == alice)
            #expect(try await resource("bob").load(using: coordinator) == bob)
            #expect(server.cacheCounts("users").requests == 2)
        }
    }

    @Test("ETag revalidation: If-None-Match, 304 serves the stored body; a new version replaces it")
    func etagRevalidation() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "etag", query: ["cc": "max-age=0", "etag": "1"])
            let first = try await resource.loadResponse(using: coordinator)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.source == .revalidated && second.value == first.value)
            #expect(second.source.isCache)  // a 304 confirmed the stored value
            #expect(second.metrics.total > .zero)
            #expect(server.cacheCounts("etag") == (2, 1))
            #expect(server.requests(to: "/cache?key=etag").last?.header("If-None-Match") == "\"v1\"")
            server.setCacheVersion("etag", 2)
            let third = try await resource.loadResponse(using: coordinator)
            #expect(third.source == .network && third.value.version == 2)
            #expect(try await resource.loadResponse(using: coordinator).source == .revalidated)
            #expect(server.cacheCounts("etag") == (4, 2))
        }
    }

    @Test("Last-Modified revalidation with If-Modified-Since")
    func lastModifiedRevalidation() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "lm", query: ["cc": "no-cache", "lm": "1"])
            _ = try await resource.load(using: coordinator)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.source == .revalidated && second.value.served == 1)
            #expect(server.requests(to: "/cache?key=lm").last?.header("If-Modified-Since") != nil)
            #expect(server.cacheCounts("lm") == (2, 1))
        }
    }

    @Test("a 304 merges its headers: a new max-age makes the entry fresh")
    func notModifiedMerge() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "merge", query: ["etag": "1"])
            server.setCacheControl("merge", "max-age=0")
            _ = try await resource.load(using: coordinator)
            server.setCacheControl("merge", "max-age=3600")
            let revalidated = try await resource.loadResponse(using: coordinator)
            #expect(revalidated.source == .revalidated)
            #expect(revalidated.response.headerFields[.cacheControl] == "max-age=3600")
            #expect(revalidated.response.headerFields[.contentType] == "application/json")
            let fresh = try await resource.loadResponse(using: coordinator)
            #expect(fresh.source == .memory && fresh.value.served == 1)
            #expect(server.cacheCounts("merge") == (2, 1))
        }
    }

    @Test("Vary: a request differing in a Vary'd field is not served the stored variant")
    func vary() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            func resource(_ language: String) -> CachedResource {
                CachedResource(
                    baseURL: server.baseURL, key: "vary", query: ["cc": "max-age=600", "vary": "Accept-Language"],
                    headers: [.acceptLanguage: language])
            }
            #expect(try await resource("en").loadResponse(using: coordinator).value.lang == "en")
            #expect(try await resource("en").loadResponse(using: coordinator).source == .memory)
            let french = try await resource("fr").loadResponse(using: coordinator)
            #expect(french.source == .network && french.value.lang == "fr")
            #expect(server.cacheCounts("vary").requests == 2)
            let star = CachedResource(baseURL: server.baseURL, key: "star", query: ["cc": "max-age=600", "vary": "*"])
            _ = try await star.load(using: coordinator)
            #expect(try await star.loadResponse(using: coordinator).source == .network)
        }
    }

    @Test("no-store is never stored, under HTTP or an app policy", arguments: ["http", "app"])
    func noStore(policy: String) async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "nostore", query: ["cc": "no-store, max-age=600"],
                cachePolicy: policy == "http" ? .http() : .cacheElseNetwork(maxAge: .seconds(600)))
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
            #expect(server.cacheCounts("nostore").requests == 2)
        }
    }

    @Test("no-cache revalidates every time")
    func noCache() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "nc", query: ["cc": "no-cache, max-age=600", "etag": "1"])
            _ = try await resource.load(using: coordinator)
            for _ in 0..<3 { #expect(try await resource.loadResponse(using: coordinator).source == .revalidated) }
            #expect(server.cacheCounts("nc") == (4, 3))
        }
    }

    @Test("max-age counts the Age the server reports")
    func maxAgeWithAge() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "age", query: ["cc": "max-age=60", "age": "50"])
            _ = try await resource.load(using: coordinator)
            clock.advance(8)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
            clock.advance(3)
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
        }
    }

    @Test("an invalid Expires means already expired")
    func invalidExpires() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "exp", query: ["expires": "0"])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
            let valid = CachedResource(
                baseURL: server.baseURL, key: "exp2", query: ["expires": HTTPDate.format(Date() + 3600)])
            _ = try await valid.load(using: coordinator)
            #expect(try await valid.loadResponse(using: coordinator).source == .memory)
        }
    }

    @Test("stale-if-error serves the stale value when the server is down or failing")
    func staleIfError() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "sie", query: ["cc": "max-age=1, stale-if-error=300"])
            let stored = try await resource.load(using: coordinator)
            clock.advance(10)
            server.failCacheKey("sie", status: 503)
            let failing = try await resource.loadResponse(using: coordinator)
            #expect(failing.value == stored && failing.isStale && failing.networkError?.status?.code == 503)
            await server.stop()
            let down = try await resource.loadResponse(using: coordinator)
            #expect(down.value == stored && down.networkError?.code == .cannotConnect)
            clock.advance(300)
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.code == .cannotConnect)
        }
    }

    @Test("servingStaleWhenUnreachable: a stale value answers when the origin gives no answer, within the allowance")
    func staleWhenUnreachable() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let query = ["cc": "max-age=1", "etag": "1"]
            let allowing = CachePolicy.http().servingStaleWhenUnreachable(upTo: .seconds(600))
            let resource = CachedResource(baseURL: server.baseURL, key: "swu", query: query, cachePolicy: allowing)
            let plain = CachedResource(baseURL: server.baseURL, key: "swu", query: query)
            let stored = try await resource.load(using: coordinator)
            clock.advance(10)
            server.failCacheKey("swu", status: 0)
            // Without the allowance, the stale entry does not answer.
            #expect(await serviceError { _ = try await plain.load(using: coordinator) }?.code == .connectionClosed)
            let dropped = try await resource.loadResponse(using: coordinator)
            #expect(dropped.value == stored && dropped.isStale && dropped.networkError?.code == .connectionClosed)
            // A request that wants a fresh answer gets none stale; its max-stale caps the allowance.
            for directive in ["no-cache", "max-age=5", "min-fresh=1", "max-stale=5"] {
                var asking = resource
                asking.headers[.cacheControl] = directive
                let error = await serviceError { _ = try await asking.load(using: coordinator) }
                #expect(error?.code == .connectionClosed, "\(directive)")
            }
            // An answer, even a failing one, is not "unreachable".
            server.failCacheKey("swu", status: 503)
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.status?.code == 503)
            // Neither must-revalidate nor no-cache may be served stale.
            for control in ["max-age=1, must-revalidate", "no-cache"] {
                let key = "swu-\(control.count)"
                let strict = CachedResource(
                    baseURL: server.baseURL, key: key, query: ["cc": control, "etag": "1"], cachePolicy: allowing)
                _ = try await strict.load(using: coordinator)
                clock.advance(10)
                server.failCacheKey(key, status: 0)
                #expect(await serviceError { _ = try await strict.load(using: coordinator) }?.code == .connectionClosed)
            }
            await server.stop()
            let down = try await resource.loadResponse(using: coordinator)
            #expect(down.value == stored && down.isStale && down.networkError?.code == .cannotConnect)
            clock.advance(600)
            #expect(await serviceError { _ = try await resource.load(using: coordinator) }?.code == .cannotConnect)
        }
    }

    @Test("a body in a transfer coding other than chunked is stored with that coding in its Transfer-Encoding")
    func transferCodedBodyKeepsItsCoding() async throws {
        struct TransferCoded: Resource {
            typealias Response = Data
            let base: String
            var endpoint: Endpoint { Endpoint(base, path: "/unknown-transfer-coding", query: ["chunked": "1"]) }
            var cachePolicy: CachePolicy { .cacheElseNetwork(maxAge: .seconds(60)) }
        }
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = TransferCoded(base: server.baseURL)
            let network = try await resource.loadResponse(using: coordinator)
            #expect(
                network.source == .network && network.response.headerFields[.transferEncoding] == "x-custom, chunked")
            let stored = try await resource.loadResponse(using: coordinator)
            #expect(stored.source == .memory && stored.value == Data("hello".utf8))
            #expect(stored.response.headerFields[.transferEncoding] == "x-custom")
        }
    }

    @Test("must-revalidate: a stale value is never served, even on error")
    func mustRevalidate() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "mr", query: ["cc": "max-age=1, must-revalidate, stale-if-error=300"])
            _ = try await resource.load(using: coordinator)
            clock.advance(5)
            server.failCacheKey("mr", status: 503)
            let error = await serviceError { _ = try await resource.load(using: coordinator) }
            #expect(error?.code == .unacceptableStatus && error?.status?.code == 503)
        }
    }

    @Test("stale-while-revalidate returns at once and refreshes in the background")
    func staleWhileRevalidate() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let events = coordinator.events()
            let resource = CachedResource(
                baseURL: server.baseURL, key: "swr",
                query: ["cc": "max-age=1, stale-while-revalidate=300", "date": "none"])
            _ = try await resource.load(using: coordinator)
            clock.advance(10)
            server.setCacheVersion("swr", 2)
            let stale = try await resource.loadResponse(using: coordinator)
            #expect(stale.source == .memory && stale.isStale && stale.value.version == 1)
            // The refresh is a load of its own: wait for it to store version 2.
            var stores = 0
            for await event in events {
                if event.kind.cacheEvent?.name == .stored { stores += 1 }
                if stores == 2 { break }
            }
            let refreshed = try await resource.loadResponse(using: coordinator)
            #expect(refreshed.source == .memory && !refreshed.isStale && refreshed.value.version == 2)
            #expect(server.cacheCounts("swr").requests == 2)
        }
    }

    @Test("a stale-while-revalidate refresh outlives the deadline of the load that started it")
    func aRefreshIsNotCutByItsCallersDeadline() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let events = coordinator.events()
            let resource = CachedResource(
                baseURL: server.baseURL, key: "swr-deadline",
                query: ["cc": "max-age=1, stale-while-revalidate=300", "date": "none", "delayMs": "300"])
            _ = try await resource.load(using: coordinator)
            clock.advance(10)
            server.setCacheVersion("swr-deadline", 2)
            // The stale value comes at once, well within 100 ms; the refresh takes 300.
            let stale = try await withDeadline(in: .milliseconds(100)) {
                try await resource.loadResponse(using: coordinator)
            }
            #expect(stale.isStale && stale.value.version == 1)
            var stores = 0
            for await event in events {
                if event.kind.cacheEvent?.name == .stored { stores += 1 }
                #expect(event.kind.name != .failed, "the refresh failed: \(event.kind)")
                if stores == 2 || event.kind.name == .failed { break }
            }
            let refreshed = try await resource.loadResponse(using: coordinator)
            #expect(!refreshed.isStale && refreshed.value.version == 2)
        }
    }

    @Test("an unsafe method that succeeds invalidates the URL's stored response")
    func unsafeMethodsInvalidate() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "inv", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
            var post = resource
            post.method = .post
            post.cachePolicy = .networkOnly
            _ = try await post.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .network)
        }
    }

    @Test("updates(): the cached value, then the network's, with sources marked")
    func updates() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "up", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            var first: [Loaded<Versioned>] = []
            for try await update in resource.updates(using: coordinator) { first.append(update) }
            #expect(first.map(\.source) == [.network])
            server.setCacheVersion("up", 2)
            var second: [Loaded<Versioned>] = []
            for try await update in resource.updates(using: coordinator) { second.append(update) }
            #expect(second.map(\.source) == [.memory, .network])
            #expect(second.map(\.value.version) == [1, 2])
            #expect(server.cacheCounts("up").requests == 2)

            let tagged = CachedResource(
                baseURL: server.baseURL, key: "up-etag", query: ["etag": "1"],
                cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            _ = try await tagged.load(using: coordinator)
            var third: [ResponseSource] = []
            for try await update in tagged.updates(using: coordinator) { third.append(update.source) }
            #expect(third == [.memory, .revalidated])
        }
    }

    @Test("updates(): a network failure after the cached value ends the stream with the error")
    func updatesFailure() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(baseURL: server.baseURL, key: "upfail", cachePolicy: .networkElseCache())
            _ = try await resource.load(using: coordinator)
            server.failCacheKey("upfail", status: 500)
            var received: [ResponseSource] = []
            var failure: (any Error)?
            do {
                for try await update in resource.updates(using: coordinator) { received.append(update.source) }
            } catch {
                failure = error
            }
            #expect(received == [.memory])
            #expect((failure as? ServiceError)?.status?.code == 500)
        }
    }

    @Test("the disk tier serves a new coordinator (and a new process) without a request")
    func diskTier() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let resource = CachedResource(
            baseURL: server.baseURL, key: "disk", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600), tiers: .disk))
        for round in 0..<2 {
            let transport = CurlTransport()
            var configuration = RequestCoordinator.Configuration()
            configuration.cache = TieredCache(store: try DiskCache(directory: directory))
            let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
            let loaded = try await resource.loadResponse(using: coordinator)
            #expect(loaded.source == (round == 0 ? .network : .disk))
            #expect(loaded.value.served == 1)
            await transport.shutdown()
        }
        #expect(server.cacheCounts("disk").requests == 1)
    }

    @Test("a stored response that no longer decodes is removed and loaded afresh")
    func undecodableEntry() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let lenient = CachedResource(
                baseURL: server.baseURL, key: "shape", cachePolicy: .cacheElseNetwork(maxAge: .seconds(600)))
            _ = try await lenient.load(using: coordinator)
            server.setCacheVersion("shape", 2)
            let strict = StrictResource(inner: lenient)
            let loaded = try await strict.loadResponse(using: coordinator)
            #expect(loaded.source == .network && loaded.value.version == 2)
        }
    }

    @Test("hits, misses, stores, revalidations and evictions are events")
    func events() async throws {
        try await withCachingCoordinator(memory: .init(totalCost: 4_000, count: 2, largestEntryFraction: 1)) {
            server, coordinator, _ in
            let stream = coordinator.events()
            for key in ["e1", "e2", "e3"] {
                let resource = CachedResource(
                    baseURL: server.baseURL, key: key, query: ["cc": "max-age=600", "etag": "1"])
                _ = try await resource.load(using: coordinator)
            }
            let again = CachedResource(baseURL: server.baseURL, key: "e3", query: ["cc": "max-age=600", "etag": "1"])
            _ = try await again.load(using: coordinator)
            let nocache = CachedResource(baseURL: server.baseURL, key: "e4", query: ["cc": "no-cache", "etag": "1"])
            _ = try await nocache.load(using: coordinator)
            _ = try await nocache.load(using: coordinator)
            await coordinator.shutdown()
            var kinds: [String] = []
            for await event in stream {
                guard let cache = event.kind.cacheEvent else { continue }
                switch cache.name {
                case .hit: kinds.append("hit \(cache.tier!) \(cache.key!.hasSuffix("/cache"))")
                case .miss: kinds.append("miss")
                case .stored: kinds.append("stored \(cache.tier!)")
                case .revalidated: kinds.append("revalidated \(cache.notModified!)")
                case .evicted: kinds.append("evicted \(cache.tier!) \(cache.count!)")
                default: kinds.append("\(cache)")
                }
            }
            #expect(kinds.filter { $0 == "miss" }.count == 4)
            #expect(kinds.contains("hit memory true"))
            #expect(kinds.contains("stored memory"))
            #expect(kinds.contains("evicted memory 1"))
            #expect(kinds.contains("revalidated true"))
        }
    }
}

/// Refuses version 1, as a model that changed between app versions would.
struct StrictResource: Resource {
    typealias Response = Versioned
    var inner: CachedResource
    var endpoint: Endpoint { inner.endpoint }
    var cachePolicy: CachePolicy { inner.cachePolicy }
    func decode(_ body: Data, response: HTTPResponse) throws -> Versioned {
        let value = try JSONDecoder().decode(Versioned.self, from: body)
        guard value.version >= 2 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "version 1 is no longer understood"))
        }
        return value
    }
}

/// Tokens whose refresh fails, as when the token server cannot be reached.
final class OfflineTokens: TokenProvider {
    private let count = LockedValue(0)
    var refreshes: Int { count.withLock { $0 } }
    func currentToken() async throws -> String { "first-token" }
    func refreshToken(replacing rejected: String) async throws -> String {
        count.withLock { $0 += 1 }
        throw ServiceError(.cannotConnect, "The token server cannot be reached.")
    }
}
