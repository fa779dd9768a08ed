import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// Cancellation, shutdown and streaming with transfers on every loop of a transport.
@Suite("Several curl loops: cancel, shutdown, stream")
struct MultiLoopLifecycleTests {
    /// A transport whose loops spill at `perLoop` transfers (their share of the per-host limit).
    static func transport(loops: Int, name: String, perLoop: Int = 2, streamBufferSize: Int? = nil) -> CurlTransport {
        var configuration = CurlTransport.Configuration()
        configuration.loops = loops
        configuration.maximumConnectionsPerHost = loops * perLoop
        configuration.threadName = name
        if let streamBufferSize { configuration.streamBufferSize = streamBufferSize }
        return CurlTransport(configuration: configuration)
    }

    /// Starts `count` requests to a gate one by one, each once the previous one is held, so that
    /// each loop fills up to its spill threshold in turn. They have no idle timeout: the test
    /// opens the gate (a sanitizer build under load may take more than the default 60 s).
    static func holdOnEveryLoop(
        _ count: Int, gate: String, server: TestServer, transport: CurlTransport
    ) async throws -> [Task<Int, any Error>] {
        var configured = TransferOptions()
        configured.idleTimeout = nil
        let options = configured  // a constant: the tasks below each capture it
        var tasks: [Task<Int, any Error>] = []
        for index in 0..<count {
            tasks.append(
                Task {
                    try await transport.send(server.request("/gate?name=\(gate)"), body: nil, options: options).body
                        .count
                })
            try await eventually { server.heldAtGate(gate) == index + 1 }
        }
        let loops = transport.group.loops.count
        if count % loops == 0 {
            #expect(transport.group.loops.map(\.load) == Array(repeating: count / loops, count: loops))
        }
        return tasks
    }

    @Test("cancelling tasks with transfers on every loop ends each with cancelled; the transport carries on")
    func cancelOnEveryLoop() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(loops: 4, name: "cmc")
        let tasks = try await Self.holdOnEveryLoop(8, gate: "cancel", server: server, transport: transport)
        for task in tasks { task.cancel() }
        for task in tasks {
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .cancelled)
        }
        #expect(transport.group.loops.map(\.load) == [0, 0, 0, 0])
        let response = try await transport.send(server.request("/json"))
        #expect(response.head.status == .ok)
        server.openGate("cancel")
        await transport.shutdown()
        await server.stop()
    }

    @Test("shutdown drains transfers on every loop: new ones fail with shutDown, held ones finish")
    func drainingShutdown() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(loops: 4, name: "cmd")
        let tasks = try await Self.holdOnEveryLoop(8, gate: "drain", server: server, transport: transport)
        let shutdown = Task { await transport.shutdown() }
        try await eventually {
            transport.group.loops.allSatisfy { $0.phase != .running }
        }
        let refused = await serviceError { _ = try await transport.send(server.request("/json")) }
        #expect(refused?.code == .shutDown)
        server.openGate("drain")
        for task in tasks { #expect(try await task.value > 0) }
        await shutdown.value
        #expect(transport.group.loops.allSatisfy { $0.phase == .stopped })
        await server.stop()
    }

    @Test("shutdown(cancellingInFlight:) fails transfers on every loop with shutDown")
    func cancellingShutdown() async throws {
        let server = try await TestServer.start()
        let transport = Self.transport(loops: 4, name: "cmk")
        let tasks = try await Self.holdOnEveryLoop(8, gate: "stop", server: server, transport: transport)
        await transport.shutdown(cancellingInFlight: true)
        for task in tasks {
            let error = await serviceError { _ = try await task.value }
            #expect(error?.code == .shutDown)
        }
        #expect(transport.group.loops.map(\.load) == [0, 0, 0, 0])
        server.openGate("stop")
        await server.stop()
    }

    @Test("a stream on the second loop pauses when its consumer lags and resumes when it reads")
    func streamPausesAndResumesOnSecondLoop() async throws {
        let server = try await TestServer.start()
        let bufferSize = 16 << 10
        let transport = Self.transport(loops: 2, name: "cmp", perLoop: 1, streamBufferSize: bufferSize)
        // The first loop is busier, so the stream goes to the second.
        let held = try await Self.holdOnEveryLoop(1, gate: "busy", server: server, transport: transport)
        #expect(transport.group.loops.map(\.load) == [1, 0])
        var options = TransferOptions()
        options.maximumBodySize = nil
        let size = 1 << 20
        let streamed = try await transport.streamResponse(server.request("/bytes?n=\(size)"), options: options)
        #expect(transport.group.loops.map(\.load) == [1, 1])
        try await eventually { streamed.body.channel.isPaused }
        let consumer = Task {
            var received = 0
            var intact = true
            for try await chunk in streamed.body {
                intact = intact && Payloads.isPattern(chunk, from: received)
                received += chunk.count
            }
            return (received, intact)
        }
        // A resume sent to the wrong loop would leave the stream paused for good: bound the wait.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            consumer.cancel()
        }
        let (received, intact) = try await consumer.value
        watchdog.cancel()
        #expect(received == size)
        #expect(intact)
        #expect(streamed.body.bufferedHighWaterMark <= bufferSize + (64 << 10))
        server.openGate("busy")
        for task in held { #expect(try await task.value > 0) }
        await transport.shutdown()
        await server.stop()
    }
}
