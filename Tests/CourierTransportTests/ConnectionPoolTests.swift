import CourierCore
import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// `CurlTransport.poolSnapshot()` against loopback servers that hold their answers at a gate,
/// so that how many connections are open and in use is known at each step.
@Suite("Connection pool snapshots")
struct ConnectionPoolTests {
    static func transport(perHost: Int = 64, loops: Int = 1, name: String) -> CurlTransport {
        AdmissionTests.transport(connections: perHost, loops: loops, name: name)
    }

    static func send(_ transport: CurlTransport, _ server: TestServer, _ path: String) -> Task<Int, any Error> {
        Task {
            try await transport.send(server.request(path), body: nil, options: AdmissionTests.patient).body.count
        }
    }

    /// The snapshot once `condition` holds, or the last one after 60 s.
    static func snapshot(
        of transport: CurlTransport, when condition: (ConnectionPoolSnapshot) -> Bool
    ) async -> ConnectionPoolSnapshot {
        let deadline = ContinuousClock.now + .seconds(60)
        var snapshot = await transport.poolSnapshot()
        while !condition(snapshot), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
            snapshot = await transport.poolSnapshot()
        }
        return snapshot
    }

    @Test("three held requests: three connections in use; once answered, the same three idle")
    func inUseThenIdle() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(name: "pool-idle")
        let origin = server.baseURL
        #expect(await transport.poolSnapshot().connections.isEmpty)
        let held = (0..<3).map { _ in Self.send(transport, server, "/gate?name=held") }
        #expect(await server.waitUntilHeld("held", count: 3))
        let busy = await Self.snapshot(of: transport) { $0.connections[origin]?.inUse == 3 }
        #expect(busy.connections[origin] == .init(open: 3, inUse: 3))
        #expect(busy.transfersRunning == 3)
        #expect(busy.transfersWaiting == 0)
        #expect(busy.loops.map(\.connecting) == [0])
        server.openGate("held")
        for task in held { _ = try await task.value }
        let quiet = await transport.poolSnapshot()
        #expect(quiet.connections[origin] == .init(open: 3, inUse: 0))
        #expect(quiet.connections[origin]?.idle == 3)
        #expect(quiet.transfersRunning == 0)
        // The next request reuses one of them.
        _ = try await transport.send(server.request("/json"), body: nil, options: AdmissionTests.patient)
        #expect(await transport.poolSnapshot().connections[origin] == .init(open: 3, inUse: 0))
        await transport.shutdown()
        await server.stop()
    }

    @Test("over the per-host limit: two connections in use, three transfers waiting; two origins apart")
    func waitingAndOrigins() async throws {
        let server = try await TestServer.start()
        let other = try await TestServer.start()
        let transport = Self.transport(perHost: 2, name: "pool-wait")
        let held = (0..<5).map { _ in Self.send(transport, server, "/gate?name=held") }
        let elsewhere = Self.send(transport, other, "/gate?name=elsewhere")
        #expect(await server.waitUntilHeld("held", count: 2))
        #expect(await other.waitUntilHeld("elsewhere", count: 1))
        let busy = await Self.snapshot(of: transport) {
            $0.transfersWaiting == 3 && $0.connections[server.baseURL]?.inUse == 2
                && $0.connections[other.baseURL]?.inUse == 1
        }
        #expect(busy.connections[server.baseURL] == .init(open: 2, inUse: 2))
        #expect(busy.connections[other.baseURL] == .init(open: 1, inUse: 1))
        #expect(busy.transfersWaiting == 3)
        #expect(busy.transfersRunning == 3)
        server.openGate("held")
        other.openGate("elsewhere")
        for task in held + [elsewhere] { _ = try await task.value }
        let quiet = await transport.poolSnapshot()
        #expect(quiet.connections[server.baseURL] == .init(open: 2, inUse: 0))
        #expect(quiet.transfersWaiting == 0)
        await transport.shutdown()
        await other.stop()
        await server.stop()
    }

    @Test("two loops: each counts the connections it opened")
    func perLoop() async throws {
        let server = try await TestServer.start()
        // One connection per host per loop: the second transfer spills to the second loop.
        let transport = Self.transport(perHost: 2, loops: 2, name: "pool-loops")
        let first = Self.send(transport, server, "/gate?name=held")
        #expect(await server.waitUntilHeld("held", count: 1))
        let second = Self.send(transport, server, "/gate?name=held")
        #expect(await server.waitUntilHeld("held", count: 2))
        let busy = await Self.snapshot(of: transport) { $0.connections[server.baseURL]?.inUse == 2 }
        #expect(busy.loops.count == 2)
        let perLoop = busy.loops.map { $0.connections[server.baseURL] }
        #expect(perLoop == [.init(open: 1, inUse: 1), .init(open: 1, inUse: 1)])
        #expect(busy.loops.map(\.transfersRunning) == [1, 1])
        server.openGate("held")
        for task in [first, second] { _ = try await task.value }
        await transport.shutdown()
        await server.stop()
    }

    @Test("a transport with the default configuration runs defaultLoops loops, 1 to 4")
    func defaultLoops() async throws {
        let transport = CurlTransport()
        let loops = CurlTransport.Configuration.defaultLoops
        #expect((1...4).contains(loops))
        #expect(CurlTransport.Configuration().loops == loops)
        let snapshot = await transport.poolSnapshot()
        #expect(snapshot.loops.map(\.index) == Array(0..<loops))
        await transport.shutdown()
    }

    @Test("a connection the server closed, and a transport shut down, leave nothing counted")
    func closedAndShutDown() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(name: "pool-closed")
        // Asked with `Connection: close`: each connection closes after its response.
        let closing = server.request("/json", headers: [.connection: "close"])
        for _ in 0..<3 { _ = try await transport.send(closing, body: nil, options: AdmissionTests.patient) }
        let afterClose = await transport.poolSnapshot()
        #expect(afterClose.connections[server.baseURL] == nil, "\(afterClose)")
        #expect(afterClose.loops.map(\.connecting) == [0])
        _ = try await transport.send(server.request("/json"), body: nil, options: AdmissionTests.patient)
        let kept = await transport.poolSnapshot()
        #expect(kept.connections[server.baseURL] == .init(open: 1, inUse: 0), "\(kept)")
        await transport.shutdown()
        let after = await transport.poolSnapshot()
        #expect(after.connections.isEmpty)
        #expect(after.transfersRunning == 0)
        await server.stop()
    }

    @Test(
        "snapshots asked while the transport shuts down, from tasks on its loops, all get an answer",
        .timeLimit(.minutes(1)))
    func snapshotsDuringShutdown() async throws {
        for round in 0..<20 {
            let transport = Self.transport(loops: 2, name: "pool-stop")
            let executor = try #require(transport.taskExecutor)
            let answers = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask(executorPreference: executor) { await transport.poolSnapshot().loops.count }
                }
                group.addTask {
                    await transport.shutdown()
                    return 2
                }
                for _ in 0..<4 {
                    group.addTask(executorPreference: executor) { await transport.poolSnapshot().loops.count }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers == Array(repeating: 2, count: 9), "round \(round)")
        }
    }
}
