import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// The README's transport examples, compiled and run against the loopback server
/// (`api.example.com` replaced by the server's address).
@Suite struct ReadmeExamplesTests {
    @Test func theReadmeExamplesRun() async throws {
        let server = try await TestServer.start()
        let authority = server.authority
        let scheme = "http"
        let tenantID = "tenant-42"
        var chunks = 0
        func handle(_ chunk: Data) { chunks += 1 }

        // "A first request"
        let transport = CurlTransport()
        var options = TransferOptions()
        options.timeout = .seconds(10)
        let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: "/json")
        do {
            let response = try await transport.send(request, body: nil, options: options)
            print(response.head.status, response.body.count, response.metrics.total)
        } catch let error as ServiceError where error.code == .timedOut {
            print("slow server:", error.recoverySuggestion)
        }

        // Raw header strings are checked.
        var post = HTTPRequest(method: .post, scheme: scheme, authority: authority, path: "/echo")
        post.headerFields.append(try RequestValidation.field(name: "X-Tenant", value: tenantID))
        let posted = try await transport.send(post, body: .string(#"{"kind":"login"}"#), options: TransferOptions())
        #expect(try Echo(posted.body).header("x-tenant") == tenantID)

        // Streaming and downloads.
        let streamed = try await transport.stream(request)
        for try await chunk in streamed.body { handle(chunk) }
        #expect(chunks >= 1)
        let (progress, reporter) = ProgressReporter.makeStream()
        var downloadOptions = TransferOptions()
        downloadOptions.progress = reporter
        downloadOptions.maximumBodySize = nil
        let printer = Task { for await p in progress { print(p.bytesReceived, p.expectedBytesToReceive ?? -1) } }
        let directory = try TemporaryDirectory()
        _ = try await transport.download(request, to: directory.file("file.bin"), options: downloadOptions)
        await printer.value

        // The loop thread as a task executor.
        let sizes = try await withTaskExecutorPreference(transport.taskExecutor) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for id in 1...100 {
                    group.addTask {
                        let request = HTTPRequest(
                            method: .get, scheme: scheme, authority: authority, path: "/bytes?n=\(id)")
                        return try await transport.send(request).body.count
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        #expect(sizes == 5_050)

        await transport.shutdown()
        await server.stop()
    }
}
