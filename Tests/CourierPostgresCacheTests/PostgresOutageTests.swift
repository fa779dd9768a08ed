#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("PostgreSQL cache tier: server outage", postgresAvailable)
struct PostgresOutageTests {
    @Test(
        "with the server killed, loads succeed from the network with storeFailed events; after a restart the tier serves again"
    )
    func serverKilledMidRun() async throws {
        var configuration = PostgresCacheStore.Configuration()  // the default 250 ms per call
        configuration.accessTimeResolution = .zero
        try await withPostgresStore(configuration) { cluster, store in
            let events = try await withSharedTierCoordinator(store: store) { server, coordinator in
                let events = coordinator.events(bufferingNewest: 10_000)
                func load(_ key: String) async throws -> Loaded<Data> {
                    try await CacheRouteResource(baseURL: server.baseURL, key: key).loadResponse(using: coordinator)
                }
                /// Loads `key` (twice when the first was not served by the tier) until the tier
                /// serves it, for up to 30 s (the machine may be too busy for one 250 ms call).
                func servedByTier(_ key: String) async throws -> Bool {
                    let started = ContinuousClock.now
                    while ContinuousClock.now - started < .seconds(30) {
                        if try await load(key).source == .shared { return true }
                        if try await load(key).source == .shared { return true }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    return false
                }
                try await store.prepare()
                #expect(try await load("before").source == .network)
                #expect(try await servedByTier("before"))

                try await cluster.kill()
                var slowest = Duration.zero
                for index in 0..<4 {
                    let started = ContinuousClock.now
                    let loaded = try await load("during-\(index)")
                    slowest = max(slowest, ContinuousClock.now - started)
                    #expect(loaded.source == .network)
                }
                #expect(try await load("before").source == .network)
                // A lookup and a store, each bounded by 250 ms, plus a loopback request: well under
                // a second alone, 3.8 s seen with the whole suite running on 2 cores. The bound
                // catches a call the 250 ms limit did not end, not a slow machine.
                #expect(slowest < .seconds(8), "slowest load while the server was down: \(slowest)")
                #expect(server.cacheCounts("during-0").requests == 1)

                try await cluster.restart()
                let restarted = ContinuousClock.now
                let recovered = try await servedByTier("after")
                let recoveredAfter = recovered ? ContinuousClock.now - restarted : nil
                #expect(recovered, "the store never served again after the restart")
                // Committed before the crash, recovered by the restart (the tier was skipped
                // for "before" while the server was down, so nothing rewrote it).
                #expect(
                    try await cluster.psql(
                        "SELECT count(*) FROM courier_cache_entries WHERE cache_key LIKE '%/cache?key=before'") == "1")
                if ProcessInfo.processInfo.environment["COURIER_PG_FIGURES"] != nil {
                    print(
                        "postgres outage: slowest load while down \(slowest); served again "
                            + "\(recoveredAfter.map { "\($0)" } ?? "never") after restart")
                }
                return events
            }
            var failures = 0
            var reasons: Set<String> = []
            for await event in events where event.kind.cacheEvent?.name == .storeFailed {
                #expect(event.kind.cacheEvent?.tier == .shared)
                failures += 1
                reasons.insert(event.kind.cacheEvent?.reason ?? "")
            }
            if ProcessInfo.processInfo.environment["COURIER_PG_FIGURES"] != nil {
                print("postgres outage: \(failures) storeFailed events; reasons: \(reasons.sorted())")
            }
            // Each load while down: a failed lookup and a failed store.
            #expect(failures >= 10)
        }
    }

    @Test(
        "a server that stops answering (a lock held on the table): a call times out within the limit, later ones fail at once for a second, then work again"
    )
    func unresponsiveServer() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.timeout = .milliseconds(250)
        try await withPostgresStore(configuration) { cluster, store in
            try await store.prepare()
            let key = CacheKey("GET http://api.example/slow")
            // Set up under the 250 ms limit, so retried: with the whole suite running on 2 cores
            // this first write once took longer (and a failure pauses the store for a second).
            var stored = false
            let setUp = ContinuousClock.now
            while !stored, ContinuousClock.now - setUp < .seconds(30) {
                do {
                    try await store.store(sampleResponse(), for: key)
                    stored = true
                } catch {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            try #require(stored)
            // The lock holds until the test cancels it: a timed lock could run out on a busy
            // machine before the retry below reaches the server (CI run of 689258d).
            let locker = try cluster.psqlInBackground(
                "BEGIN; LOCK TABLE courier_cache_entries IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120); COMMIT;")
            let lockQuery = """
                SELECT count(*) FROM pg_locks WHERE relation = 'courier_cache_entries'::regclass
                    AND mode = 'AccessExclusiveLock' AND granted
                """
            let asked = ContinuousClock.now
            while try await cluster.psql(lockQuery) != "1", ContinuousClock.now - asked < .seconds(30) {}
            // The read times out; the write right after it fails at once (the pause after a failure).
            for (call, code) in [("read", ServiceError.Code.timedOut), ("write", .cacheStoreFailed)] {
                let started = ContinuousClock.now
                let error = await #expect(throws: ServiceError.self, "\(call)") {
                    if call == "read" {
                        _ = try await store.entry(for: key)
                    } else {
                        try await store.store(sampleResponse(body: "new"), for: key)
                    }
                }
                let elapsed = ContinuousClock.now - started
                #expect(error?.code == code, "\(call): \(error.map { "\($0)" } ?? "no error")")
                // Bounds that catch a call the limit did not end (the lock holds 120 s), not a busy
                // machine (1.7 s seen for the read with the whole suite running on 2 cores); the
                // write's code says it never reached the server.
                #expect(elapsed < (call == "read" ? .seconds(5) : .seconds(1)), "\(call) took \(elapsed)")
            }
            // After the pause, a call asks the server again (and times out again: the lock holds).
            let paused = ContinuousClock.now
            var retried: ServiceError?
            while retried?.code != .timedOut, ContinuousClock.now - paused < .seconds(10) {
                do { _ = try await store.entry(for: key) } catch { retried = error as? ServiceError }
                if retried?.code != .timedOut { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(retried?.code == .timedOut)
            #expect(ContinuousClock.now - paused >= .milliseconds(900))
            let release = """
                SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
                    WHERE query LIKE '%LOCK TABLE courier_cache_entries%' AND pid <> pg_backend_pid()
                """
            #expect(try await cluster.psql(release) == "1")
            // The cancelled session ends with an error, its transaction rolled back.
            _ = await locker.exit()
            // The lock is gone: the store answers again (retried: the machine may be busy).
            var entry: CachedResponse?
            let released = ContinuousClock.now
            while entry == nil, ContinuousClock.now - released < .seconds(30) {
                entry = try? await store.entry(for: key)
                if entry == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(entry != nil)
        }
    }
}
#endif
