import CourierCore
import CourierServices
import CourierTesting
import Foundation

/// A shared tier for fleet-collapsing tests: entries and a lease table in one actor, as a
/// database would keep them for every process of a fleet. Leases expire on `clock` (an
/// `ImmediateTestClock` a coordinator sleeps on, so waiting advances it).
actor LeasingTestStore: CacheLeasing {
    struct Broken: Error {}

    nonisolated var tier: CacheTier { .shared }

    private var entries: [CacheKey: CachedResponse] = [:]
    /// Entries stored (what the fleet would see).
    var entryCount: Int { entries.count }
    private var leases: [CacheKey: (token: String, expires: Duration)] = [:]
    private var serial = 0
    private nonisolated let clock: ImmediateTestClock
    /// Whether every call throws, as a database that went away would.
    private var failing = false
    /// Leases handed out, and given back by their holder.
    private(set) var granted = 0
    private(set) var released = 0
    /// Counts refused lease requests (a process waiting for another's entry).
    nonisolated let refusals = CountWaiters()

    init(clock: ImmediateTestClock = ImmediateTestClock()) { self.clock = clock }

    /// Real time each lookup and lease request takes, as a slow database's would.
    private var latency = Duration.zero

    func setFailing(_ failing: Bool) { self.failing = failing }

    func setLatency(_ latency: Duration) { self.latency = latency }

    func entry(for key: CacheKey) async throws -> CachedResponse? {
        if failing { throw Broken() }
        if latency > .zero { try await Task.sleep(for: latency) }
        return entries[key]
    }

    func store(_ response: CachedResponse, for key: CacheKey) async throws {
        if failing { throw Broken() }
        entries[key] = response
    }

    func removeEntry(for key: CacheKey) async throws {
        if failing { throw Broken() }
        entries[key] = nil
    }

    func removeExpired(now: Date) async throws {
        if failing { throw Broken() }
        entries = entries.filter { $0.value.expiresAt.map { $0 > now } ?? true }
    }

    func removeAll() async throws {
        if failing { throw Broken() }
        entries = [:]
    }

    func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease? {
        if failing { throw Broken() }
        if latency > .zero { try await Task.sleep(for: latency) }
        let now = clock.now.offset
        if let lease = leases[key], lease.expires > now {
            refusals.add()
            return nil
        }
        serial += 1
        granted += 1
        leases[key] = ("lease-\(serial)", now + duration)
        return CacheLease(key: key, token: "lease-\(serial)")
    }

    func releaseLease(_ lease: CacheLease) async throws {
        if failing { throw Broken() }
        guard leases[lease.key]?.token == lease.token else { return }
        leases[lease.key] = nil
        released += 1
    }
}
