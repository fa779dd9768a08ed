import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// The idle limit after and during a request body: counted from the last byte that moved
/// either way, whatever was uploaded (curl's speed average, used before, let a stall after a
/// 285-byte POST run about 6 s past a 1 s limit).
@Suite struct IdleUploadTests {
    static let limit: Duration = .seconds(1)

    /// Checks how long the client waited through the server's silence: not less than the limit,
    /// less a little (the last byte's acknowledgement comes before the server's read returns, a
    /// moment that grows on a loaded machine), and
    /// at most the documented margin (a quarter of the limit while request bytes wait in the send
    /// queue) past it, plus slack for a loaded or sanitized run. curl's speed average, used
    /// before, let the client wait about 7 s.
    static func expectWaitWithinTheMargin(_ waited: Duration?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let waited else {
            Issue.record("the server never went silent", sourceLocation: sourceLocation)
            return
        }
        #expect(waited >= limit - .milliseconds(200), "\(waited)", sourceLocation: sourceLocation)
        #expect(waited < limit + limit / 4 + .milliseconds(1500), "\(waited)", sourceLocation: sourceLocation)
    }

    static func options() -> TransferOptions {
        var options = TransferOptions()
        options.idleTimeout = limit
        return options
    }

    static func post(_ server: PacedServer) -> HTTPRequest {
        HTTPRequest(method: .post, scheme: "http", authority: server.authority, path: "/upload")
    }

    /// Sends `body` to a server that reads it as `script` says; returns the error, how long after
    /// the server went silent it came, and the bodies the server read to their end. The task runs
    /// on the transport's loop thread, so a busy cooperative pool does not delay its clock.
    static func failure(
        _ body: RequestBody, _ script: PacedServer.Script
    ) async throws -> (ServiceError?, Duration?, [Int]) {
        let server = try PacedServer(script: script)
        defer { server.stop() }
        let transport = CurlTransport()
        let (error, failedAt) = await withTaskExecutorPreference(transport.taskExecutor) {
            let error = await serviceError {
                _ = try await transport.send(post(server), body: body, options: options())
            }
            return (error, ContinuousClock.now)
        }
        await transport.shutdown(cancellingInFlight: true)
        return (error, server.silenceStarts.first.map { failedAt - $0 }, server.bodiesRead)
    }

    @Test(arguments: [1, 285])
    func aStallAfterASmallBodyTimesOut(size: Int) async throws {
        // The server reads the whole body, then says nothing for 10 s.
        let (error, waited, read) = try await Self.failure(
            .bytes(Data(repeating: 0x61, count: size)), PacedServer.Script(silence: .seconds(10)))
        #expect(read == [size])
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(waited)
    }

    @Test func aStallAfterALargeFileBodyTimesOut() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("upload.bin")
        try Data(repeating: 0x62, count: 5_000_000).write(to: URL(fileURLWithPath: path))
        // The whole body is read at once; on loopback that takes well under the margin.
        let (error, waited, read) = try await Self.failure(
            .file(atPath: path), PacedServer.Script(silence: .seconds(10)))
        #expect(read == [5_000_000])
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(waited)
    }

    @Test func aStallMidBodyTimesOut() async throws {
        // The server reads 256 KiB of 5 MB and stops reading: the rest waits in the queues.
        let (error, waited, read) = try await Self.failure(
            .bytes(Data(repeating: 0x63, count: 5_000_000)),
            PacedServer.Script(bodyBytesRead: 256 << 10, silence: .seconds(10)))
        #expect(read.isEmpty)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(waited)
    }

    @Test func aSlowButSteadyUploadIsNeverIdle() async throws {
        // 1 MiB read 16 KiB every 50 ms: some 3 s in all against a 1 s limit. curl hands most
        // of the body to the kernel at once, and then has nothing to do for seconds: the bytes
        // leaving the send queue are what shows the upload is alive.
        let server = try PacedServer(script: PacedServer.Script(piece: 16 << 10, pause: .milliseconds(50)))
        defer { server.stop() }
        let transport = CurlTransport()
        let started = ContinuousClock.now
        let response = try await transport.send(
            Self.post(server), body: .bytes(Data(repeating: 0x64, count: 1 << 20)), options: Self.options())
        #expect(response.head.status.code == 200)
        #expect(server.bodiesRead == [1 << 20])
        #expect(ContinuousClock.now - started > Self.limit, "the upload was not slower than the limit")
        await transport.shutdown()
    }
}
