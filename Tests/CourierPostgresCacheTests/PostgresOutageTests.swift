#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("PostgreSQL cache tier: server outage", postgresAvailable)
struct PostgresOutageTests {
    @Test("with the server killed, loads succeed from the network with storeFailed events; after a restart the tier serves again")
    func serverKilledMidRun() async throws {
        var configuration = PostgresCacheStore.Configuration()  // the default 250 ms per call
        configuration.accessTimeResolution = .zero
        try await withPostgresStore(configuration) { cluster, store in
            let events = try await withSharedTierCoordinator(store: store) { server, coordinator in
                let events = coordinator.events(bufferingNewest: 10_000)
                func load(_ key: String) async throws -> Loaded<Data> {
                    try await CacheRouteResource(baseURL: server.baseURL, key: key).loadResponse(using: coordinator)
                }
                #expect(try await load("before").source == .network)
                #expect(try await load("before").source == .shared)

                try await cluster.kill()
                var slowest = Duration.zero
                for index in 0..<4 {
                    let started = ContinuousClock.now
                    let loaded = try await load("during-\(index)")
                    slowest = max(slowest, ContinuousClock.now - started)
                    #expect(loaded.source == .network)
                }
                #expect(try await load("before").source == .network)
                // A lookup and a store, each bounded by 250 ms, plus a loopback request.
                #expect(slowest < .seconds(2), "slowest load while the server was down: \(slowest)")
                #expect(server.cacheCounts("during-0").requests == 1)

                try await cluster.restart()
                var recoveredAfter: Duration?
                let restarted = ContinuousClock.now
                var attempt = 0
                while recoveredAfter == nil, ContinuousClock.now - restarted < .seconds(30) {
                    attempt += 1
                    _ = try await load("after-\(attempt)")
                    if try await load("after-\(attempt)").source == .shared {
                        recoveredAfter = ContinuousClock.now - restarted
                    } else {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                #expect(recoveredAfter != nil, "the store never served again after the restart")
                // Committed before the crash, recovered by the restart.
                #expect(try await load("before").source == .shared)
                if ProcessInfo.processInfo.environment["COURIER_PG_FIGURES"] != nil {
                    print(
                        "postgres outage: slowest load while down \(slowest); served again "
                            + "\(recoveredAfter.map { "\($0)" } ?? "never") after restart")
                }
                return events
            }
            var failures = 0
            for await event in events where event.kind.cacheEvent?.name == .storeFailed {
                #expect(event.kind.cacheEvent?.tier == .shared)
                failures += 1
            }
            // Each load while down: a failed lookup and a failed store.
            #expect(failures >= 10)
        }
    }

    @Test("a server that stops answering (a lock held on the table): calls throw timedOut within the limit, then work again")
    func unresponsiveServer() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.timeout = .milliseconds(250)
        try await withPostgresStore(configuration) { cluster, store in
            try await store.prepare()
            let key = CacheKey("GET http://api.example/slow")
            try await store.store(sampleResponse(), for: key)
            let locker = try cluster.psqlInBackground(
                "BEGIN; LOCK TABLE courier_cache_entries IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;")
            let lockQuery = """
                SELECT count(*) FROM pg_locks WHERE relation = 'courier_cache_entries'::regclass
                    AND mode = 'AccessExclusiveLock' AND granted
                """
            let asked = ContinuousClock.now
            while try await cluster.psql(lockQuery) != "1", ContinuousClock.now - asked < .seconds(30) {}
            for call in ["read", "write"] {
                let started = ContinuousClock.now
                let error = await #expect(throws: ServiceError.self, "\(call)") {
                    if call == "read" {
                        _ = try await store.entry(for: key)
                    } else {
                        try await store.store(sampleResponse(body: "new"), for: key)
                    }
                }
                let elapsed = ContinuousClock.now - started
                #expect(error?.code == .timedOut, "\(call): \(error.map { "\($0)" } ?? "no error")")
                #expect(elapsed < .seconds(1), "\(call) took \(elapsed)")
            }
            #expect(await locker.exit() == 0)
            // The lock is gone: the store answers again (retried: the machine may be busy).
            var entry: CachedResponse?
            let released = ContinuousClock.now
            while entry == nil, ContinuousClock.now - released < .seconds(30) {
                entry = try? await store.entry(for: key)
            }
            #expect(entry != nil)
        }
    }
}
#endif
