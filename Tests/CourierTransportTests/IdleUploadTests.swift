import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// The idle limit after and during a request body: counted from the last byte that moved
/// either way, whatever was uploaded (curl's speed average, used before, let a stall after a
/// 285-byte POST run about 6 s past a 1 s limit).
@Suite struct IdleUploadTests {
    static let limit: Duration = .seconds(1)

    /// How long a failed upload took: from just before it was sent, and from when the server
    /// went silent (nil when it never did).
    struct Wait {
        var sinceSend: Duration
        var sinceSilence: Duration?
    }

    /// Checks how long the client waited through the server's silence: at least the limit since
    /// the request was sent (the last byte moved after that; the coarse clock can be a few
    /// milliseconds early), and at most the documented margin (a quarter of the limit while
    /// request bytes wait in the send queue) past the server's silence, plus slack for a loaded
    /// or sanitized run. The lower bound is not taken from the silence: the kernel acknowledges
    /// the last bytes before the server's read returns, a moment that grew to 0.9 s in a loaded
    /// sanitized run. curl's speed average, used before, let the client wait about 7 s.
    static func expectWaitWithinTheMargin(_ wait: Wait, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(wait.sinceSend >= limit - .milliseconds(50), "\(wait.sinceSend)", sourceLocation: sourceLocation)
        guard let waited = wait.sinceSilence else {
            Issue.record("the server never went silent", sourceLocation: sourceLocation)
            return
        }
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

    /// Sends `body` to a server that reads it as `script` says; returns the error, how long it
    /// took to come, and the bodies the server read to their end. The task runs on the
    /// transport's loop thread, so a busy cooperative pool does not delay its clock.
    static func failure(
        _ body: RequestBody, _ script: PacedServer.Script
    ) async throws -> (ServiceError?, Wait, [Int]) {
        let server = try PacedServer(script: script)
        defer { server.stop() }
        let transport = CurlTransport()
        let (error, sent, failedAt) = await withTaskExecutorPreference(transport.taskExecutor) {
            let sent = ContinuousClock.now
            let error = await serviceError {
                _ = try await transport.send(post(server), body: body, options: options())
            }
            return (error, sent, ContinuousClock.now)
        }
        await transport.shutdown(cancellingInFlight: true)
        let wait = Wait(sinceSend: failedAt - sent, sinceSilence: server.silenceStarts.first.map { failedAt - $0 })
        return (error, wait, server.bodiesRead)
    }

    @Test(arguments: [1, 285])
    func aStallAfterASmallBodyTimesOut(size: Int) async throws {
        // The server reads the whole body, then says nothing for 10 s.
        let (error, wait, read) = try await Self.failure(
            .bytes(Data(repeating: 0x61, count: size)), PacedServer.Script(silence: .seconds(10)))
        #expect(read == [size])
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(wait)
    }

    @Test func aStallAfterALargeFileBodyTimesOut() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("upload.bin")
        try Data(repeating: 0x62, count: 5_000_000).write(to: URL(fileURLWithPath: path))
        // The whole body is read at once; on loopback that takes well under the margin.
        let (error, wait, read) = try await Self.failure(
            .file(atPath: path), PacedServer.Script(silence: .seconds(10)))
        #expect(read == [5_000_000])
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(wait)
    }

    @Test func aStallMidBodyTimesOut() async throws {
        // The server reads 256 KiB of 5 MB and stops reading: the rest waits in the queues.
        let (error, wait, read) = try await Self.failure(
            .bytes(Data(repeating: 0x63, count: 5_000_000)),
            PacedServer.Script(bodyBytesRead: 256 << 10, silence: .seconds(10)))
        #expect(read.isEmpty)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        Self.expectWaitWithinTheMargin(wait)
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
