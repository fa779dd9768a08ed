#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("PostgreSQL cache store: leases", postgresAvailable)
struct PostgresLeaseTests {
    @Test("a lease refuses a second holder until it is released")
    func acquireRefuseRelease() async throws {
        try await withPostgresStore { cluster, first in
            let key = CacheKey("GET http://api.example/cold")
            let lease = try #require(try await first.acquireLease(on: key, for: .seconds(60)))
            #expect(lease.key == key)
            try await withRunningStore(on: cluster) { second in
                #expect(try await second.acquireLease(on: key, for: .seconds(60)) == nil)
                #expect(
                    try await second.acquireLease(on: CacheKey("GET http://api.example/other"), for: .seconds(60))
                        != nil)
                try await first.releaseLease(lease)
                let taken = try #require(try await second.acquireLease(on: key, for: .seconds(60)))
                #expect(taken.token != lease.token)
                // The first holder releasing again (late) leaves the second holder's lease alone.
                try await first.releaseLease(lease)
                #expect(try await first.acquireLease(on: key, for: .seconds(60)) == nil)
            }
        }
    }

    @Test("a lease whose holder never releases it expires on its own")
    func expiry() async throws {
        try await withPostgresStore { cluster, first in
            let key = CacheKey("GET http://api.example/abandoned")
            try await withRunningStore(on: cluster) { second in
                // The second store's first call (a connection, the schema check) before the lease:
                // on a busy machine it took longer than the lease (CI, with the whole suite running).
                try await second.prepare()
                let started = ContinuousClock.now
                _ = try #require(try await first.acquireLease(on: key, for: .seconds(3)))
                #expect(try await second.acquireLease(on: key, for: .seconds(60)) == nil)
                var taken: CacheLease?
                while taken == nil, ContinuousClock.now - started < .seconds(30) {
                    try await Task.sleep(for: .milliseconds(50))
                    taken = try await second.acquireLease(on: key, for: .seconds(60))
                }
                #expect(taken != nil)
                #expect(ContinuousClock.now - started >= .seconds(3))
            }
            // removeExpired also clears expired leases.
            _ = try #require(
                try await first.acquireLease(on: CacheKey("GET http://api.example/brief"), for: .milliseconds(1)))
            try await Task.sleep(for: .milliseconds(20))
            try await first.removeExpired(now: Date())
            #expect(try await cluster.psql("SELECT count(*) FROM courier_cache_leases") == "1")
        }
    }
}
#endif
