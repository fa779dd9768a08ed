import CourierCore
import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// `TransferOptions.cancellation` ends a transfer as the cancellation of its task does: the
/// coordinator relies on it to end a transfer that a load runs on its own task.
@Suite("A transfer's cancellation, from outside its task")
struct TransferCancellationTests {
    static func options(_ cancellation: TransferCancellation) -> TransferOptions {
        var options = AdmissionTests.patient
        options.cancellation = cancellation
        return options
    }

    @Test("cancelled mid-transfer: the transfer fails with cancelled and the server sees the connection close")
    func midTransfer() async throws {
        let server = try await TestServer.start()
        let transport = AdmissionTests.transport(connections: 4, name: "tc-mid")
        let cancellation = TransferCancellation()
        let held = AdmissionTests.send(transport, server, "/gate?name=held", options: Self.options(cancellation))
        #expect(await server.waitUntilHeld("held", count: 1))
        cancellation.cancel()
        let error = try await AdmissionTests.failure(of: held) {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
        }
        #expect(error?.code == .cancelled)
        #expect(await server.waitForClosedConnections(1))
        // The transport carries on.
        #expect(try await transport.send(server.request("/json")).head.status == .ok)
        await transport.shutdown()
        await server.stop()
    }

    @Test("cancelled before it is sent: the transfer fails with cancelled and never reaches the server")
    func beforeSending() async throws {
        let server = try await TestServer.start()
        let transport = AdmissionTests.transport(connections: 4, name: "tc-before")
        let cancellation = TransferCancellation()
        cancellation.cancel()
        let never = AdmissionTests.send(transport, server, "/gate?name=never", options: Self.options(cancellation))
        let error = try await AdmissionTests.failure(of: never) {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
        }
        #expect(error?.code == .cancelled)
        #expect(server.requests(to: "/gate").isEmpty)
        await transport.shutdown()
        await server.stop()
    }

    @Test("cancelled while waiting for a connection: it fails at once; the busy connection is untouched")
    func whileWaiting() async throws {
        let server = try await TestServer.start()
        let transport = AdmissionTests.transport(connections: 1, name: "tc-wait")
        let busy = AdmissionTests.send(transport, server, "/gate?name=busy")
        #expect(await server.waitUntilHeld("busy", count: 1))
        let cancellation = TransferCancellation()
        let queued = AdmissionTests.send(transport, server, "/gate?name=queued", options: Self.options(cancellation))
        try await eventually { AdmissionTests.waiting(transport) == 1 }
        cancellation.cancel()
        let error = try await AdmissionTests.failure(of: queued) {
            await transport.shutdown(cancellingInFlight: true)
            await server.stop()
        }
        #expect(error?.code == .cancelled)
        #expect(AdmissionTests.waiting(transport) == 0)
        #expect(server.heldAtGate("busy") == 1)
        server.openGate("busy")
        #expect(try await busy.value.contains(#""gate":"busy""#))
        #expect(server.gateCounts("queued").served == 0)
        await transport.shutdown()
        await server.stop()
    }
}
