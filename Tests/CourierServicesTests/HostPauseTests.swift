import CourierCore
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import CourierCaching
@testable import CourierServices

/// A shared tier that keeps host pauses, as a database would for every process of a fleet:
/// pauses on real time, and no entries.
actor PausingTestStore: HostPausing {
    nonisolated var tier: CacheTier { .shared }
    private var pauses: [String: ContinuousClock.Instant] = [:]
    /// Every pause written, in order.
    private(set) var written: [(host: String, duration: Duration)] = []
    private var failing = false

    struct Broken: Error {}

    func setFailing(_ failing: Bool) { self.failing = failing }

    func pauseHost(_ host: String, for duration: Duration) async throws {
        if failing { throw Broken() }
        written.append((host, duration))
        pauses[host] = max(pauses[host] ?? .now, .now + duration)
    }

    func hostPauses() async throws -> [String: Duration] {
        if failing { throw Broken() }
        let now = ContinuousClock.now
        return pauses.filter { $0.value > now }.mapValues { now.duration(to: $0) }
    }

    func entry(for key: CacheKey) async throws -> CachedResponse? { nil }
    func store(_ response: CachedResponse, for key: CacheKey) async throws {}
    func removeEntry(for key: CacheKey) async throws {}
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws {}
}

/// The pause in the host table alone, on made-up times.
@Suite struct HostPausePolicyTests {
    let host = HostQueue.Host(HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/"))

    @Test func aPausedHostRefusesNetworkAttemptsUntilThePauseEnds() {
        let clock = ImmediateTestClock()
        let policies = HostPolicies(budget: nil, breaker: nil, pauses: true, clock: clock)
        #expect(policies.guardsAttempts)
        #expect(policies.pause(host, for: .seconds(5)), "a new pause")
        #expect(!policies.pause(host, for: .seconds(2)), "a shorter one changes nothing")
        let refused = policies.admit(host, first: true, usesCircuit: false, timesLimit: true)
        #expect(refused.pausedUntil == .seconds(5))
        let stub = policies.admit(host, first: true, network: false, usesCircuit: false, timesLimit: true)
        #expect(stub.pausedUntil == nil, "a responder's load is not the host's")
        #expect(policies.refuses(host, after: .seconds(4)))
        #expect(!policies.refuses(host, after: .seconds(5)))
    }

    @Test func withoutAFleetNothingPauses() {
        let policies = HostPolicies(budget: nil, breaker: nil, clock: ImmediateTestClock())
        #expect(!policies.guardsAttempts)
        #expect(!policies.pause(host, for: .seconds(5)))
        #expect(policies.admit(host, first: true, usesCircuit: false, timesLimit: true).pausedUntil == nil)
    }

    @Test func aHostNameReadsBack() {
        #expect(HostQueue.Host(name: host.name) == host)
        #expect(HostQueue.Host(name: "api.example.com") == nil)
    }
}

/// Coordinators sharing a pausing store, as two processes of a fleet would.
@Suite struct HostPauseLoadTests {
    struct Item: Resource {
        typealias Response = Data
        var endpoint: Endpoint { Endpoint("https://quota.example.com", path: "/item") }
        var retryPolicy: RetryPolicy? { RetryPolicy.none }
    }

    static func coordinator(_ store: PausingTestStore, _ mock: MockTransport) -> RequestCoordinator {
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        return RequestCoordinator(transport: mock, configuration: configuration)
    }

    @Test func a429WithRetryAfterPausesTheHostForTheFleet() async throws {
        let store = PausingTestStore()
        let first = MockTransport()
        first.respond(to: .get, "/item", with: [.tooManyRequests(retryAfter: .seconds(100)), .json("{}")])
        let second = MockTransport()
        second.respond(to: .get, "/item", with: .json("{}"))
        let one = Self.coordinator(store, first)
        let other = Self.coordinator(store, second)
        let events = one.events(bufferingNewest: 100)

        let rateLimited = await serviceError { _ = try await Item().load(using: one) }
        #expect(rateLimited?.status == .tooManyRequests)
        let paused = await serviceError { _ = try await Item().load(using: one) }
        #expect(paused?.code == .hostPaused)
        #expect((paused?.retryAfter ?? .zero) > .seconds(50) && (paused?.retryAfter ?? .zero) <= .seconds(100))
        #expect(first.requestCount == 1, "the paused load was not sent")

        // The other process learns of it from the store within its refresh (a second; far
        // longer allowed for a loaded machine and a sanitizer).
        let host = HostQueue.Host(HTTPRequest(method: .get, scheme: "https", authority: "quota.example.com", path: "/"))
        let started = ContinuousClock.now
        while !other.hostPolicies.refuses(host, after: .zero), ContinuousClock.now - started < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(other.hostPolicies.refuses(host, after: .zero), "the second coordinator read the pause")
        #expect(await serviceError { _ = try await Item().load(using: other) }?.code == .hostPaused)
        #expect(second.requestCount == 0)
        await one.shutdown()
        await other.shutdown()
        let written = await store.written
        #expect(written.count == 1 && written.first?.host == "https://quota.example.com")
        #expect(written.first?.duration == .seconds(100))
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events { names.append(event.kind.name) }
        #expect(names.contains(.hostPaused))
    }

    @Test func theLoadsOwnRetryWaitsThePauseOut() async throws {
        // The load that got the 429 retries once the pause ends, however the fleet's copy of
        // the pause, read back a moment later, ends: it is not refused.
        struct Retrying: Resource {
            typealias Response = Data
            var endpoint: Endpoint { Endpoint("https://quota.example.com", path: "/item") }
        }
        let store = PausingTestStore()
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: [.tooManyRequests(retryAfter: .seconds(1)), .json("{}")])
        let coordinator = Self.coordinator(store, mock)
        let events = coordinator.events(bufferingNewest: 100)
        let started = ContinuousClock.now
        _ = try await Retrying().load(using: coordinator)
        #expect(ContinuousClock.now - started >= .seconds(1), "the retry waited for the pause")
        #expect(mock.requestCount == 2)
        await coordinator.shutdown()
        var names: [CoordinatorEvent.Kind.Name] = []
        for await event in events { names.append(event.kind.name) }
        #expect(names.contains(.retried))
        #expect(!names.contains(.retryRefused))
    }

    @Test func aStoreThatFailsLeavesThisProcesssPauseInPlace() async throws {
        let store = PausingTestStore()
        await store.setFailing(true)
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: [.serviceUnavailable(retryAfter: .seconds(8)), .json("{}")])
        let coordinator = Self.coordinator(store, mock)
        #expect(await serviceError { _ = try await Item().load(using: coordinator) }?.status == .serviceUnavailable)
        #expect(await serviceError { _ = try await Item().load(using: coordinator) }?.code == .hostPaused)
        try await Task.sleep(for: .milliseconds(8_100))
        _ = try await Item().load(using: coordinator)
        #expect(mock.requestCount == 2, "the pause ended, and the host was asked again")
        await coordinator.shutdown()
    }
}
