import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Logging
import Testing

/// Purges of what loads stored, against the loopback server.
@Suite("Purges through the coordinator's loads")
struct CachePurgeLoadTests {
    @Test("after a soft purge, loads get the stale entry at once and the origin gets one revalidation")
    func softPurgeServesStaleAndRevalidatesOnce() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "soft",
                query: ["cc": "max-age=600, stale-while-revalidate=60", "etag": "1", "sk": "product-7 catalog"])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
            let cache = try #require(coordinator.configuration.cache)

            clock.advance(1)  // a purge marks what was requested before it
            #expect(try await cache.purge(tag: "product-7", soft: true) == 1)
            let loads = try await withThrowingTaskGroup(of: Loaded<Versioned>.self) { group in
                for _ in 0..<20 { group.addTask { try await resource.loadResponse(using: coordinator) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(loads.allSatisfy { $0.value.version == 1 })
            #expect(loads.contains { $0.isStale })
            // One conditional request, answered 304: the entry is fresh again.
            #expect(await eventuallyTrue { server.cacheCounts("soft").notModified == 1 })
            #expect(await eventuallyTrue { try await !resource.loadResponse(using: coordinator).isStale })
            // A second revalidation would have gone by now (the server answers at once).
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.cacheCounts("soft").requests == 2)
            #expect(server.cacheCounts("soft").notModified == 1)
        }
    }

    @Test("after a purge by URL, the next load goes to the origin")
    func hardPurgeRefetches() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "hard", query: ["cc": "max-age=600", "sk": "product-7"])
            _ = try await resource.load(using: coordinator)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
            let cache = try #require(coordinator.configuration.cache)
            #expect(try await cache.purge(url: "\(resource.endpoint)") == 1)
            let after = try await resource.loadResponse(using: coordinator)
            #expect(after.source == .network && after.value.served == 2)
        }
    }

    @Test("malformed tags are ignored with a debug log naming them; the valid ones still purge")
    func malformedTagsAreLogged() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let records = CapturingLogHandler.Store()
            var logger = Logger(label: "test") { _ in CapturingLogHandler(store: records) }
            logger.logLevel = .debug
            let long = String(repeating: "x", count: 1_025)
            let resource = CachedResource(
                baseURL: server.baseURL, key: "tags", query: ["cc": "max-age=600", "sk": "good \(long) good"])
            _ = try await resource.load(using: coordinator, logger: logger)
            let logged = records.all.filter { $0.message.hasPrefix("purge tags ignored") }
            #expect(logged.count == 1)
            #expect(logged.first?.level == .debug)
            #expect(logged.first?.metadata["courier.cache.tags"] == "[\"\(long.prefix(64))\"]")
            let cache = try #require(coordinator.configuration.cache)
            #expect(try await cache.purge(tag: "good") == 1)

            // A response whose tags are all valid logs nothing.
            let clean = CachedResource(
                baseURL: server.baseURL, key: "clean", query: ["cc": "max-age=600", "sk": "good"])
            _ = try await clean.load(using: coordinator, logger: logger)
            #expect(records.all.filter { $0.message.hasPrefix("purge tags ignored") }.count == 1)
        }
    }

    /// True once `condition` holds (checked every 10 ms, for at most 10 s).
    func eventuallyTrue(_ condition: () async throws -> Bool) async -> Bool {
        for _ in 0..<1_000 {
            if (try? await condition()) == true { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
