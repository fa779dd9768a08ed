import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// Several loops: transfers spread over them, the connection limits hold for the transport as
/// a whole, and tasks that prefer the transport's executor stay on their loop's thread.
@Suite("Several curl loops")
struct MultiLoopTests {
    static func configuration(loops: Int, name: String) -> CurlTransport.Configuration {
        var configuration = CurlTransport.Configuration()
        configuration.loops = loops
        configuration.threadName = name
        return configuration
    }

    @Test("held requests fill a loop up to its spill threshold, then the next: with 2 each, 8 land on 4 loops")
    func transfersSpreadOverEveryLoop() async throws {
        var configuration = Self.configuration(loops: 4, name: "cms")
        configuration.maximumConnectionsPerHost = 8  // 2 per loop, so each loop spills at 2
        try await withLoopback(configuration: configuration) { server, transport in
            #expect(transport.group.loops.count == 4)
            #expect(transport.group.loops.map(\.limits.spillThreshold) == [2, 2, 2, 2])
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<8 {
                    group.addTask { try await transport.send(server.request("/gate?name=spread")).body.count }
                    try await eventually { server.heldAtGate("spread") == index + 1 }
                }
                #expect(transport.group.loops.map(\.load) == [2, 2, 2, 2])
                server.openGate("spread")
                for try await count in group { #expect(count > 0) }
            }
            #expect(transport.group.loops.map(\.load) == [0, 0, 0, 0])
            #expect(server.snapshot.connectionsAccepted == 8)
            #expect(threadNames(prefix: "cms-") == ["cms-0", "cms-1", "cms-2", "cms-3"])
        }
    }

    @Test("with default limits, 16 held requests stay on the first loop and the 17th spills to the second")
    func moderateLoadKeepsToTheFirstLoop() async throws {
        try await withLoopback(configuration: Self.configuration(loops: 4, name: "cmf")) { server, transport in
            #expect(transport.group.loops.map(\.limits.spillThreshold) == [16, 16, 16, 16])
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<17 {
                    group.addTask { try await transport.send(server.request("/gate?name=fill")).body.count }
                    try await eventually { server.heldAtGate("fill") == index + 1 }
                    #expect(transport.group.loops.map(\.load) == (index < 16 ? [index + 1, 0, 0, 0] : [16, 1, 0, 0]))
                }
                server.openGate("fill")
                for try await count in group { #expect(count > 0) }
            }
        }
    }

    @Test("sequential requests keep to the first loop and reuse its warm connection")
    func lightLoadReusesOneConnection() async throws {
        try await withLoopback(configuration: Self.configuration(loops: 4, name: "cmr")) { server, transport in
            for _ in 0..<20 {
                let response = try await transport.send(server.request("/json"))
                #expect(response.head.status == .ok)
            }
            #expect(server.snapshot.connectionsAccepted == 1)
        }
    }

    @Test("maximumConnectionsPerHost = 2 with 4 loops: 2 loops of 1 connection each, never more than 2 at once")
    func perHostLimitHoldsAcrossLoops() async throws {
        var configuration = Self.configuration(loops: 4, name: "cmh")
        configuration.maximumConnectionsPerHost = 2
        try await withLoopback(configuration: configuration) { server, transport in
            #expect(transport.group.loops.map(\.limits.connectionsPerHost) == [1, 1])
            try await sendHeld(16, to: server, gate: "host", transport: transport, expectHeld: 2)
            #expect(server.snapshot.peakConnectionsOpen <= 2)
            #expect(server.snapshot.connectionsAccepted == 2)
        }
    }

    @Test("maximumConnections = 3 with 4 loops: 3 loops of 1 connection each, never more than 3 at once")
    func totalLimitHoldsAcrossLoops() async throws {
        var configuration = Self.configuration(loops: 4, name: "cmt")
        configuration.maximumConnections = 3
        try await withLoopback(configuration: configuration) { server, transport in
            #expect(transport.group.loops.map(\.limits.connections) == [1, 1, 1])
            try await sendHeld(12, to: server, gate: "total", transport: transport, expectHeld: 3)
            #expect(server.snapshot.peakConnectionsOpen <= 3)
        }
    }

    /// Sends `count` requests at once to a gate, checks that only `expectHeld` reach it while
    /// every transfer is in a loop, then opens the gate and checks that all succeed.
    private func sendHeld(
        _ count: Int, to server: TestServer, gate: String, transport: CurlTransport, expectHeld: Int
    ) async throws {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask { try await transport.send(server.request("/gate?name=\(gate)")).body.count }
            }
            try await eventually { server.heldAtGate(gate) >= expectHeld }
            try await eventually { transport.group.loops.map(\.load).reduce(0, +) == count }
            #expect(server.heldAtGate(gate) == expectHeld)
            server.openGate(gate)
            var finished = 0
            for try await size in group where size > 0 { finished += 1 }
            #expect(finished == count)
        }
    }

    @Test("a task preferring taskExecutor stays on one loop thread across transfers; child tasks spread over all")
    func executorPreferenceKeepsTasksOnTheirLoop() async throws {
        try await withLoopback(configuration: Self.configuration(loops: 4, name: "cmx")) { server, transport in
            let records = try await withTaskExecutorPreference(transport.taskExecutor) {
                try await withThrowingTaskGroup(of: [String].self) { group in
                    for child in 0..<16 {
                        group.addTask {
                            var names = [currentThreadName()]
                            for round in 0..<5 {
                                let size = 100 + child * 7 + round
                                let response = try await transport.send(server.request("/bytes?n=\(size)"))
                                #expect(response.body.count == size)
                                names.append(currentThreadName())
                            }
                            return names
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(records.count == 16)
            for names in records {
                #expect(names.allSatisfy { $0.hasPrefix("cmx-") })
                #expect(Set(names).count == 1, "a transfer moved its task to another thread: \(names)")
            }
            #expect(Set(records.compactMap(\.first)) == ["cmx-0", "cmx-1", "cmx-2", "cmx-3"])
        }
    }

    @Test("limits split so the shares add up; no more loops than allowed connections; names keep their index")
    func splittingLimits() {
        let limits = CurlEventLoop.Limits(connectionsPerHost: 5, connections: 0, idleConnections: 2, idleHandles: 256)
        #expect(CurlLoopGroup.loopCount(requested: 3, limits: limits) == 3)
        let shares = (0..<3).map { limits.share($0, of: 3) }
        #expect(shares.map(\.connectionsPerHost) == [2, 2, 1])
        #expect(shares.map(\.connections) == [0, 0, 0])
        #expect(shares.map(\.idleConnections) == [1, 1, 1])
        #expect(shares.map(\.idleHandles) == [256, 256, 256])
        var tight = limits
        tight.connections = 2
        #expect(CurlLoopGroup.loopCount(requested: 8, limits: tight) == 2)
        #expect(CurlLoopGroup.loopCount(requested: 0, limits: limits) == 1)
        #expect(CurlLoopGroup.threadName("courier-curl", index: 0, of: 1) == "courier-curl")
        #expect(CurlLoopGroup.threadName("courier-curl", index: 3, of: 4) == "courier-curl-3")
        #expect(CurlLoopGroup.threadName("courier-ldexec", index: 1, of: 2) == "courier-ldexe-1")
        #expect(CurlTransport.Configuration().loops == CurlTransport.Configuration.defaultLoops)
        #expect((1...4).contains(CurlTransport.Configuration.defaultLoops))
    }
}

/// Waits until `condition` holds, failing the test after `seconds` rather than hanging.
func eventually(
    within seconds: Int = 60, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within \(seconds) s", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// The names of this process's threads that start with `prefix`.
func threadNames(prefix: String) -> Set<String> {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
    return Set(names.map { $0.trimmingCharacters(in: .newlines) }.filter { $0.hasPrefix(prefix) })
}
