import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("updates(refresh:): skipping the network while the stored value is fresh")
struct UpdatesRefreshTests {
    private func sources<R: Resource>(
        _ resource: R, _ coordinator: RequestCoordinator, refresh: UpdatesRefresh
    ) async throws -> [ResponseSource] {
        var received: [ResponseSource] = []
        for try await update in resource.updates(using: coordinator, refresh: refresh) {
            received.append(update.source)
        }
        return received
    }

    @Test("cacheElseNetwork: fresh is yielded alone with no request; stale and missing go to the network")
    func cacheElseNetwork() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "ws", cachePolicy: .cacheElseNetwork(maxAge: .seconds(60)))
            let run1 = try await sources(resource, coordinator, refresh: .whenStale)
            #expect(run1 == [.network])
            #expect(server.cacheCounts("ws").requests == 1)

            let run2 = try await sources(resource, coordinator, refresh: .whenStale)
            #expect(run2 == [.memory])
            #expect(server.cacheCounts("ws").requests == 1)

            let run3 = try await sources(resource, coordinator, refresh: .always)
            #expect(run3 == [.memory, .network])
            #expect(server.cacheCounts("ws").requests == 2)

            clock.advance(61)
            let run4 = try await sources(resource, coordinator, refresh: .whenStale)
            #expect(run4 == [.memory, .network])
            #expect(server.cacheCounts("ws").requests == 3)
        }
    }

    @Test("http: fresh by max-age makes no request; past max-age it revalidates")
    func http() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "wh", query: ["cc": "max-age=30", "etag": "1"], cachePolicy: .http())
            _ = try await resource.load(using: coordinator)
            let run5 = try await sources(resource, coordinator, refresh: .whenStale)
            #expect(run5 == [.memory])
            #expect(server.cacheCounts("wh").requests == 1)

            clock.advance(31)
            let run6 = try await sources(resource, coordinator, refresh: .whenStale)
            #expect(run6 == [.memory, .revalidated])
            #expect(server.cacheCounts("wh").requests == 2)
        }
    }

    @Test("stale-while-revalidate counts as stale; networkElseCache always asks the network")
    func staleWhileRevalidateAndNetworkElseCache() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let swr = CachedResource(
                baseURL: server.baseURL, key: "wswr", query: ["cc": "max-age=10, stale-while-revalidate=600"],
                cachePolicy: .http())
            _ = try await swr.load(using: coordinator)
            clock.advance(11)
            let run7 = try await sources(swr, coordinator, refresh: .whenStale)
            #expect(run7 == [.memory, .network])
            #expect(server.cacheCounts("wswr").requests == 2)

            let offline = CachedResource(baseURL: server.baseURL, key: "wnec", cachePolicy: .networkElseCache())
            _ = try await offline.load(using: coordinator)
            let run8 = try await sources(offline, coordinator, refresh: .whenStale)
            #expect(run8 == [.memory, .network])
            #expect(server.cacheCounts("wnec").requests == 2)
        }
    }
}
