import CourierCore
import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// The admission queue against a loopback server that holds responses at a gate: curl gets
/// only as many transfers as the connection limits let it run; the rest wait, cheaply.
@Suite("Admission: transfers beyond the connection limits wait outside curl")
struct AdmissionTests {
    static func transport(connections: Int, loops: Int = 1, name: String) -> CurlTransport {
        var configuration = CurlTransport.Configuration()
        configuration.loops = loops
        configuration.maximumConnectionsPerHost = connections
        configuration.threadName = name
        return CurlTransport(configuration: configuration)
    }

    /// No idle timeout: a held request may wait longer than 60 s on a slow sanitizer run.
    static var patient: TransferOptions {
        var options = TransferOptions()
        options.idleTimeout = nil
        return options
    }

    static func waiting(_ transport: CurlTransport) -> Int { transport.group.loops.reduce(0) { $0 + $1.waiting } }

    static func send(
        _ transport: CurlTransport, _ server: TestServer, _ path: String, options: TransferOptions = patient
    )
        -> Task<String, any Error>
    {
        Task {
            String(
                decoding: try await transport.send(server.request(path), body: nil, options: options).body,
                as: UTF8.self)
        }
    }

    /// The `ServiceError` `task` fails with, waiting at most 60 s: past that the test fails
    /// (after `cleanUp`) instead of hanging.
    static func failure(of task: Task<String, any Error>, cleanUp: () async -> Void) async throws -> ServiceError? {
        let outcome = LockedValue<(any Error)??>(nil)
        Task {
            do {
                _ = try await task.value
                outcome.withLock { $0 = .some(nil) }
            } catch {
                outcome.withLock { $0 = .some(error) }
            }
        }
        do {
            try await eventually { outcome.withLock { $0 != nil } }
        } catch {
            await cleanUp()
            throw error
        }
        let error = outcome.withLock { $0 ?? nil }
        if error == nil { Issue.record("expected a ServiceError, but the transfer succeeded") }
        return error as? ServiceError
    }

    @Test(
        "50 sends with a limit of 2: at most 2 reach the server at once, 48 wait outside curl, all finish",
        arguments: [1, 2])
    func fiftyThroughTwo(loops: Int) async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 2, loops: loops, name: "adm-many")
        let tasks = (0..<50).map { Self.send(transport, server, "/gate?name=w&i=\($0)") }
        do {
            try await eventually { server.heldAtGate("w") == 2 && Self.waiting(transport) == 48 }
            var released = 0
            while released < 50 {
                try await eventually { server.heldAtGate("w") > 0 }
                released += server.releaseHeld("w")
            }
            for task in tasks { #expect(try await task.value.contains(#""gate":"w""#)) }
            let counts = server.gateCounts("w")
            #expect(counts.mostHeld == 2)
            #expect(counts.served == 50)
            #expect(Self.waiting(transport) == 0)
            #expect(transport.group.loops.allSatisfy { $0.load == 0 })
        } catch {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
            throw error
        }
        await transport.shutdown()
        await server.stop()
    }

    @Test("waiting transfers are admitted first in, first out")
    func firstInFirstOut() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 1, name: "adm-fifo")
        var tasks = [Self.send(transport, server, "/gate?name=o&i=0")]
        try await eventually { server.heldAtGate("o") == 1 }
        for index in 1...5 {
            tasks.append(Self.send(transport, server, "/gate?name=o&i=\(index)"))
            try await eventually { Self.waiting(transport) == index }
        }
        var released = 0
        while released < tasks.count {
            try await eventually { server.heldAtGate("o") > 0 }
            released += server.releaseHeld("o")
        }
        for (index, task) in tasks.enumerated() {
            #expect(try await task.value.contains(#""served":\#(index + 1)}"#))
        }
        #expect(server.gateCounts("o").mostHeld == 1)
        await transport.shutdown()
        await server.stop()
    }

    @Test("cancelling a waiting transfer fails it with cancelled at once; the server never sees it")
    func cancelWhileWaiting() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 1, name: "adm-cancel")
        let held = Self.send(transport, server, "/gate?name=busy")
        try await eventually { server.heldAtGate("busy") == 1 }
        let queued = Self.send(transport, server, "/gate?name=never")
        try await eventually { Self.waiting(transport) == 1 }
        queued.cancel()
        // It ends while the only connection is still busy: it never waited for it.
        let error = try await Self.failure(of: queued) {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
        }
        #expect(error?.code == .cancelled)
        #expect(server.heldAtGate("busy") == 1)
        #expect(Self.waiting(transport) == 0)
        #expect(transport.group.loops[0].load == 1)
        server.openGate("busy")
        #expect(try await held.value.contains(#""gate":"busy""#))
        // The next request runs on the freed connection; the cancelled one never reached it.
        let next = try await transport.send(server.request("/json"))
        #expect(next.head.status == .ok)
        #expect(server.gateCounts("never").served == 0)
        await transport.shutdown()
        await server.stop()
    }

    @Test("a total timeout counts from the send: it runs out while waiting, with timedOut, before curl")
    func timeoutWhileWaiting() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 1, name: "adm-time")
        let held = Self.send(transport, server, "/gate?name=slow")
        try await eventually { server.heldAtGate("slow") == 1 }
        var options = Self.patient
        options.timeout = .milliseconds(200)
        let queued = Self.send(transport, server, "/gate?name=late", options: options)
        let error = try await Self.failure(of: queued) {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
        }
        #expect(error?.code == .timedOut)
        #expect(server.heldAtGate("slow") == 1)
        #expect(server.gateCounts("late").served == 0)
        server.openGate("slow")
        _ = try await held.value
        await transport.shutdown()
        await server.stop()
    }

    @Test("shutdown(cancellingInFlight:) fails waiting transfers with shutDown; curl never runs them")
    func cancellingShutdownFailsWaiting() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 1, name: "adm-stop")
        let held = Self.send(transport, server, "/gate?name=stop")
        try await eventually { server.heldAtGate("stop") == 1 }
        let queued = (0..<3).map { Self.send(transport, server, "/gate?name=queued&i=\($0)") }
        try await eventually { Self.waiting(transport) == 3 }
        await transport.shutdown(cancellingInFlight: true)
        for task in [held] + queued {
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .shutDown)
        }
        #expect(server.gateCounts("queued").served == 0)
        #expect(Self.waiting(transport) == 0)
        #expect(transport.group.loops[0].load == 0)
        server.openGate("stop")
        await server.stop()
    }

    @Test("a draining shutdown refuses new sends and still runs the transfers waiting")
    func drainingShutdownRunsWaiting() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(connections: 1, name: "adm-drain")
        let held = Self.send(transport, server, "/gate?name=drain")
        try await eventually { server.heldAtGate("drain") == 1 }
        let queued = (0..<3).map { Self.send(transport, server, "/echo?i=\($0)") }
        try await eventually { Self.waiting(transport) == 3 }
        let shutdown = Task { await transport.shutdown() }
        try await eventually { transport.group.loops[0].phase != .running }
        let refused = await serviceError { _ = try await transport.send(server.request("/json")) }
        #expect(refused?.code == .shutDown)
        server.openGate("drain")
        _ = try await held.value
        for task in queued { _ = try await task.value }
        await shutdown.value
        #expect(transport.group.loops[0].phase == .stopped)
        await server.stop()
    }
}
