import CourierCore
import CourierTestServer
import Foundation
import Testing

@testable import CourierServices

/// A process's gate in front of the fleet's lease: one load of a key waits on the shared tier
/// for all of them (it reads the gate's own count of followers, an internal).
@Suite("Fleet-wide collapsing: the gate in one process")
struct FleetGateTests {
    @Test("followers in one process share the leader's wait; a cancelled follower leaves at once")
    func followers() async throws {
        let store = LeasingTestStore()
        try await withFleet(store: store) { server, fleet in
            let resource = FleetResource(
                baseURL: server.baseURL, name: "fleet-follow",
                cachePolicy: FleetCollapsingTests.policy.collapsingAcrossFleet(wait: .seconds(60), lease: .seconds(60)))
            let loadA = Task { try await fleet[0].load(resource) }
            #expect(await server.waitUntilHeld("fleet-follow", count: 1))
            let leader = Task { try await fleet[1].load(resource) }
            #expect(await store.refusals.wait(until: 1, timeout: .seconds(60)))
            let follower = Task { try await fleet[1].load(resource) }
            let leaving = Task { try await fleet[1].load(resource) }
            #expect(await fleet[1].fleetGate.followers.wait(until: 2, timeout: .seconds(60)))
            leaving.cancel()
            let error = await serviceError { _ = try await leaving.value }
            #expect(error?.code == .cancelled)
            #expect(fleet[1].fleetGate.followers.count == 1)
            server.openGate("fleet-follow")
            _ = try await loadA.value
            // The leader wakes its followers before it reads the entry itself: one of them may
            // have copied it into this process's memory first (CI saw it on a loaded machine).
            let led = try await leader.value
            #expect(led.source == .shared || led.source == .memory)
            #expect(led.value.served == 1)
            let followed = try await follower.value
            #expect(followed.source == .memory || followed.source == .shared)
            #expect(followed.value.served == 1)
            #expect(server.gateCounts("fleet-follow").served == 1)
            #expect(await store.granted == 1)
        }
    }
}
