#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import PostgresNIO
import Testing

/// Runs `body` with a cluster of its own and a store on it (its pool running), then stops the
/// pool and removes the cluster, also when `body` throws.
func withPostgresStore<T: Sendable>(
    _ configuration: PostgresCacheStore.Configuration = .testing,
    _ body: (PostgresCluster, PostgresCacheStore) async throws -> T
) async throws -> T {
    let cluster = try await PostgresCluster.start()
    do {
        let result = try await withRunningStore(on: cluster, configuration) { store in
            try await body(cluster, store)
        }
        await cluster.remove()
        return result
    } catch {
        await cluster.remove()
        throw error
    }
}

/// Runs `body` with another store on `cluster` (another "process" of the fleet), its pool
/// running for as long as `body` runs, connected as `username`.
func withRunningStore<T: Sendable>(
    on cluster: PostgresCluster, _ configuration: PostgresCacheStore.Configuration = .testing,
    username: String = PostgresCluster.superuser, _ body: (PostgresCacheStore) async throws -> T
) async throws -> T {
    var postgres = PostgresClient.Configuration(
        host: "127.0.0.1", port: cluster.port, username: username, password: nil,
        database: PostgresCluster.database, tls: .disable)
    postgres.options.maximumConnections = 4
    postgres.options.connectTimeout = .seconds(2)
    let store = PostgresCacheStore(postgres: postgres, configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await store.run() }
        defer { group.cancelAll() }
        return try await body(store)
    }
}

extension PostgresCacheStore.Configuration {
    /// Generous time limits (the machine is shared and busy), no size bound, exact LRU order.
    static var testing: Self {
        var configuration = Self()
        configuration.timeout = .seconds(10)
        configuration.evictionTimeout = .seconds(10)
        configuration.maximumBytes = nil
        configuration.accessTimeResolution = .zero
        return configuration
    }
}

/// Runs `body` with the loopback test server and a coordinator whose cache is memory in front of
/// `store`, then shuts both down (cancelling what is in flight when `body` throws).
func withSharedTierCoordinator<T: Sendable>(
    store: PostgresCacheStore, _ body: (TestServer, RequestCoordinator) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    let transport = CurlTransport()
    var settings = RequestCoordinator.Configuration()
    settings.cache = TieredCache(stores: [store])
    let coordinator = RequestCoordinator(transport: transport, configuration: settings)
    do {
        let result = try await body(server, coordinator)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
        return result
    } catch {
        await coordinator.shutdown(cancellingInFlight: true)
        await transport.shutdown(cancellingInFlight: true)
        await server.stop()
        throw error
    }
}

/// `/cache?key=` of the test server with `query` and `headers`, under `cachePolicy`.
struct CacheRouteResource: Resource {
    typealias Response = Data
    var baseURL: String
    var key: String
    var query: KeyValuePairs<String, String> = [:]
    var headers: HTTPFields = [:]
    var cachePolicy: CachePolicy = .cacheElseNetwork(maxAge: .seconds(600), tiers: .shared)
    var endpoint: Endpoint {
        Endpoint(
            baseURL, path: "/cache",
            query: [URLQueryItem(name: "key", value: key)]
                + query.map {
                    URLQueryItem(name: $0.key, value: $0.value)
                })
    }
}

extension Loaded<Data> {
    /// The `/cache` route's body as text.
    var text: String { String(decoding: value, as: UTF8.self) }
}

/// A response with every field a store must keep.
func sampleResponse(
    body: String = "{\"hello\":\"fleet\"}", variant: String? = nil,
    expiresAt: Date? = Date(timeIntervalSince1970: 2_000_000_000.125)
) -> CachedResponse {
    CachedResponse(
        status: .ok,
        headerFields: [.contentType: "application/json", .eTag: "\"v1\"", .cacheControl: "max-age=600"],
        body: Data(body.utf8), requestTime: Date(timeIntervalSince1970: 1_764_000_000.123456789),
        responseTime: Date(timeIntervalSince1970: 1_764_000_000.987654321), expiresAt: expiresAt, variant: variant)
}

/// Returns true once `condition` holds (checked every 10 ms), or false after 20 s.
func eventually(_ condition: () async -> Bool) async -> Bool {
    let started = ContinuousClock.now
    while ContinuousClock.now - started < .seconds(20) {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return false
}

/// Whether PostgreSQL tests run here (see ``PostgresCluster/testsCanRun``).
let postgresAvailable = Testing.ConditionTrait.enabled(
    if: PostgresCluster.testsCanRun, Comment(rawValue: PostgresCluster.skipReason))
#endif

#if PostgreSQL
/// Runs `body` with the loopback test server, stopping it afterwards (also when `body` throws).
func withTestServer<T: Sendable>(_ body: (TestServer) async throws -> T) async throws -> T {
    let server = try await TestServer.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
#endif
