#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

/// The README's "Sharing a cache across a fleet" set-up (the README check's package builds
/// without the `PostgreSQL` trait, so the block is checked here), run against a cluster of the
/// test's own, with the test server standing in for `https://catalog.internal`.
@Suite("PostgreSQL README example", postgresAvailable)
struct PostgresReadmeExampleTests {
    struct Products: Resource {
        typealias Response = Data
        var baseURL = "https://catalog.internal"
        var endpoint: Endpoint { Endpoint(baseURL, path: "/cache", query: ["key": "products"]) }
        // Memory, then PostgreSQL; on a miss everywhere, one instance of the fleet fetches.
        var cachePolicy: CachePolicy {
            .cacheElseNetwork(maxAge: .seconds(300)).collapsingAcrossFleet(wait: .seconds(5), lease: .seconds(10))
        }
    }

    @Test("the fleet example runs: the store under a ServiceGroup, a second coordinator served from PostgreSQL")
    func fleetExampleRuns() async throws {
        let cluster = try await PostgresCluster.start()
        do {
            try await withTestServer { server in
                // As in the README, with the test's host, port and user.
                var postgres = PostgresClient.Configuration(
                    host: "127.0.0.1", port: cluster.port, username: PostgresCluster.superuser, password: nil,
                    database: PostgresCluster.database, tls: .disable)
                postgres.options.maximumConnections = 8  // the pool's bound, per instance
                // The README keeps the 250 ms default; a busy test machine gets the tests' limits.
                let store = PostgresCacheStore(postgres: postgres, configuration: .testing)
                var configuration = RequestCoordinator.Configuration()
                configuration.cache = TieredCache(stores: [store])
                let transport = CurlTransport()
                let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
                let group = ServiceGroup(services: [store], gracefulShutdownSignals: [], logger: Logger(label: "app"))

                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask { try await group.run() }
                    try await store.prepare()
                    let products = Products(baseURL: server.baseURL)
                    let first = try await products.loadResponse(using: coordinator)
                    #expect(first.source == .network)
                    // Another instance: its own coordinator and memory, the same database.
                    let other = RequestCoordinator(transport: transport, configuration: configuration.withFreshMemory)
                    #expect(try await products.loadResponse(using: other).source == .shared)
                    #expect(server.cacheCounts("products").requests == 1)
                    await other.shutdown()
                    await coordinator.shutdown()
                    await transport.shutdown()
                    await group.triggerGracefulShutdown()
                    try await tasks.waitForAll()
                }
            }
            await cluster.remove()
        } catch {
            await cluster.remove()
            throw error
        }
    }
}

extension RequestCoordinator.Configuration {
    /// The same settings with a memory tier of its own in front of the same stores.
    var withFreshMemory: Self {
        var copy = self
        copy.cache = cache.map { TieredCache(stores: $0.stores) }
        return copy
    }
}
#endif
