#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import PostgresNIO
import Testing

@Suite("PostgreSQL cache store", postgresAvailable)
struct PostgresCacheStoreTests {
    @Test("a write that arrives late (an older response) never replaces a newer entry")
    func lateWriteKeepsTheNewerEntry() async throws {
        try await withPostgresStore { _, store in
            let key = CacheKey("GET http://api.example/late")
            var newer = sampleResponse(body: "newer")
            newer.responseTime = newer.responseTime.addingTimeInterval(60)
            try await store.store(newer, for: key)
            try await store.store(sampleResponse(body: "older"), for: key)
            #expect(try await store.entry(for: key)?.body == Data("newer".utf8))
            var newest = sampleResponse(body: "newest")
            newest.responseTime = newest.responseTime.addingTimeInterval(120)
            try await store.store(newest, for: key)
            #expect(try await store.entry(for: key)?.body == Data("newest".utf8))
        }
    }

    @Test("tables dropped under a running store: the next call fails, and the one after sets them up again")
    func tablesDroppedUnderARunningStore() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.pauseAfterFailure = .zero
        try await withPostgresStore(configuration) { cluster, store in
            let key = CacheKey("GET http://api.example/dropped")
            try await store.store(sampleResponse(), for: key)
            _ = try await cluster.psql("DROP TABLE courier_cache_entries, courier_cache_leases, courier_cache_schema")
            await #expect(throws: ServiceError.self) { try await store.entry(for: key) }
            #expect(try await store.entry(for: key) == nil)
            try await store.store(sampleResponse(), for: key)
            #expect(try await store.entry(for: key) == sampleResponse())
        }
    }

    @Test("the store's own pool asks the server to stop statements it gave up on (statement_timeout)")
    func statementTimeout() async throws {
        var configuration = PostgresCacheStore.Configuration.testing
        configuration.timeout = .seconds(3)
        try await withPostgresStore(configuration) { _, store in
            var shown: [String] = []
            for try await value in try await store.client.query("SHOW statement_timeout").decode(String.self) {
                shown.append(value)
            }
            #expect(shown == ["12s"])  // 4 times the call's bound
        }
    }

    @Test("an entry reads back whole, through this store and a second one on the same database")
    func roundTrip() async throws {
        try await withPostgresStore { cluster, store in
            let key = CacheKey("GET http://api.example/v1/users/42")
            let response = sampleResponse(variant: "vary-digest")
            try await store.store(response, for: key)
            #expect(try await store.entry(for: key) == response)
            #expect(try await store.entry(for: CacheKey("GET http://api.example/v1/users/43")) == nil)
            try await withRunningStore(on: cluster) { second in
                #expect(try await second.entry(for: key) == response)
                var replaced = sampleResponse(body: "{}", expiresAt: nil)
                replaced.status = .notFound
                try await second.store(replaced, for: key)
            }
            let reread = try #require(try await store.entry(for: key))
            #expect(reread.status == .notFound && reread.body == Data("{}".utf8) && reread.expiresAt == nil)
            try await store.removeEntry(for: key)
            #expect(try await store.entry(for: key) == nil)
            #expect(try await cluster.psql("SELECT version FROM courier_cache_schema") == "4")
        }
    }

    @Test("responses for two credentials and two Vary variants stay apart")
    func credentialsAndVary() async throws {
        try await withPostgresStore { _, store in
            var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/v1/me")
            request.headerFields[.authorization] = "Bearer alice"
            let alice = CacheKey(request: request, credentialHeaders: [.authorization])
            request.headerFields[.authorization] = "Bearer bob"
            let bob = CacheKey(request: request, credentialHeaders: [.authorization])
            #expect(alice != bob)
            try await store.store(sampleResponse(body: "alice"), for: alice)
            #expect(try await store.entry(for: bob) == nil)
            try await store.store(sampleResponse(body: "bob"), for: bob)
            #expect(try await store.entry(for: alice)?.body == Data("alice".utf8))
            #expect(try await store.entry(for: bob)?.body == Data("bob".utf8))

            let page = CacheKey("GET https://api.example/page")
            try await store.store(sampleResponse(body: "en", variant: "lang=en"), for: page)
            #expect(try await store.entry(for: page)?.variant == "lang=en")
            try await store.store(sampleResponse(body: "fr", variant: "lang=fr"), for: page)
            let french = try #require(try await store.entry(for: page))
            #expect(french.variant == "lang=fr" && french.body == Data("fr".utf8))
        }
    }

    @Test("a row with a changed byte (body, status, fields, time or key) is a miss and is removed")
    func corruptedRows() async throws {
        try await withPostgresStore { cluster, store in
            let corruptions = [
                "body = set_byte(body, 0, get_byte(body, 0) # 1)",
                "status = 203",
                "header_fields = set_byte(header_fields, 3, get_byte(header_fields, 3) # 32)",
                "response_time = response_time + 1",
                "cache_key = 'GET http://api.example/corrupt/x'",
            ]
            for (index, corruption) in corruptions.enumerated() {
                let key = CacheKey("GET http://api.example/corrupt/\(index)")
                try await store.store(sampleResponse(), for: key)
                try await cluster.psql("UPDATE courier_cache_entries SET \(corruption)")
                #expect(try await store.entry(for: key) == nil, "\(corruption)")
                #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "0", "\(corruption)")
            }
            // An intact row for another key under the same digest (a collision) is a miss, and stays.
            let key = CacheKey("GET http://api.example/collision")
            let other = CacheKey("GET http://api.example/other")
            try await store.store(sampleResponse(), for: other)
            try await cluster.psql(
                "UPDATE courier_cache_entries SET key_digest = sha256(convert_to('\(key.rawValue)', 'UTF8'))")
            #expect(try await store.entry(for: key) == nil)
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "1")
        }
    }

    @Test("expired entries are misses through a tiered cache, and removeExpired deletes them in one statement")
    func expiry() async throws {
        try await withPostgresStore { cluster, store in
            let now = Date()
            let expired = CacheKey("GET http://api.example/expired")
            let fresh = CacheKey("GET http://api.example/fresh")
            let forever = CacheKey("GET http://api.example/forever")
            try await store.store(sampleResponse(expiresAt: now.addingTimeInterval(-5)), for: expired)
            try await store.store(sampleResponse(expiresAt: now.addingTimeInterval(3600)), for: fresh)
            try await store.store(sampleResponse(expiresAt: nil), for: forever)
            let tiered = TieredCache(stores: [store])
            #expect(await tiered.lookup(expired, in: .shared) == nil)
            #expect(await tiered.lookup(fresh, in: .shared)?.tier == .shared)
            try await store.store(sampleResponse(expiresAt: now.addingTimeInterval(-5)), for: expired)
            try await store.removeExpired(now: now)
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "2")
            #expect(try await store.entry(for: expired) == nil)
            #expect(try await store.entry(for: fresh) != nil)
            #expect(try await store.entry(for: forever) != nil)
            try await store.removeAll()
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_entries") == "0")
        }
    }

    @Test("a schema keeps one store's entries, leases and pauses apart from another's on the same database")
    func schemas() async throws {
        try await withPostgresStore { cluster, store in
            var fleetA = PostgresCacheStore.Configuration.testing
            fleetA.schema = "fleet_a"
            let key = CacheKey("GET http://api.example/schema")
            try await store.store(sampleResponse(body: "public"), for: key)
            try await withRunningStore(on: cluster, fleetA) { other in
                #expect(try await other.entry(for: key) == nil)
                try await other.store(sampleResponse(body: "fleet a"), for: key)
                #expect(try await other.entry(for: key)?.body == Data("fleet a".utf8))
                #expect(try await other.acquireLease(on: key, for: .seconds(30)) != nil)
                #expect(try await store.acquireLease(on: key, for: .seconds(30)) != nil, "another lease table")
                try await other.pauseHost("https://api.example", for: .seconds(30))
                #expect(try await other.hostPauses()["https://api.example"] != nil)
                #expect(try await store.hostPauses().isEmpty)
            }
            #expect(try await store.entry(for: key)?.body == Data("public".utf8))
            #expect(try await cluster.psql("SELECT version FROM fleet_a.courier_cache_schema") == "4")
            #expect(try await cluster.psql("SELECT count(*) FROM fleet_a.courier_cache_entries") == "1")
            // Its size bound counts and evicts its own rows only.
            fleetA.maximumBytes = 1
            let removed = try await withRunningStore(on: cluster, fleetA) { try await $0.evictLeastRecentlyUsed() }
            #expect(removed.count == 1)
            #expect(try await cluster.psql("SELECT count(*) FROM fleet_a.courier_cache_entries") == "0")
            #expect(try await store.entry(for: key)?.body == Data("public".utf8))
        }
    }

    @Test("a schema name that is not a plain identifier fails every call with cacheStoreFailed, touching nothing")
    func invalidSchemas() async throws {
        try await withPostgresStore { cluster, store in
            let key = CacheKey("GET http://api.example/schema")
            try await store.store(sampleResponse(), for: key)
            let names = [
                "Fleet", "fleet-a", "1fleet", "pg_fleet", "fleet; DROP TABLE courier_cache_entries", "",
                "fleet.a", "fléet", String(repeating: "a", count: 64),
            ]
            for name in names {
                var configuration = PostgresCacheStore.Configuration.testing
                configuration.schema = name
                try await withRunningStore(on: cluster, configuration) { bad in
                    do {
                        try await bad.store(sampleResponse(), for: key)
                        Issue.record("schema \(name) was taken")
                    } catch let error as ServiceError {
                        #expect(error.code == .cacheStoreFailed)
                        #expect(error.message.contains("not a plain identifier"))
                    }
                }
            }
            #expect(try await store.entry(for: key) != nil)
            #expect(try await cluster.psql("SELECT count(*) FROM pg_namespace WHERE nspname LIKE '%leet%'") == "0")
            // The longest name PostgreSQL takes is fine, and so is a reserved word (quoted).
            for name in [String(repeating: "a", count: 63), "user", "default"] {
                var configuration = PostgresCacheStore.Configuration.testing
                configuration.schema = name
                try await withRunningStore(on: cluster, configuration) {
                    try await $0.store(sampleResponse(), for: key)
                }
                #expect(try await cluster.psql("SELECT count(*) FROM \"\(name)\".courier_cache_entries") == "1")
            }
        }
    }

    @Test("a role that may not create schemas uses the one an administrator made for it")
    func leastPrivilege() async throws {
        try await withPostgresStore { cluster, _ in
            _ = try await cluster.psql(
                """
                CREATE ROLE courier_app LOGIN;
                REVOKE CREATE ON DATABASE \(PostgresCluster.database) FROM PUBLIC;
                CREATE SCHEMA app_cache AUTHORIZATION courier_app
                """)
            var configuration = PostgresCacheStore.Configuration.testing
            configuration.schema = "app_cache"
            let key = CacheKey("GET http://api.example/least-privilege")
            try await withRunningStore(on: cluster, configuration, username: "courier_app") { store in
                try await store.store(sampleResponse(body: "app"), for: key)
                #expect(try await store.entry(for: key)?.body == Data("app".utf8))
            }
            // Another schema it may not create: a clear failure, not a hang.
            configuration.schema = "elsewhere"
            try await withRunningStore(on: cluster, configuration, username: "courier_app") { store in
                let error = await #expect(throws: ServiceError.self) {
                    try await store.store(sampleResponse(), for: key)
                }
                #expect(error?.code == .cacheStoreFailed)
            }
        }
    }
}
#endif
