import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// The calling thread's name (at most 15 bytes, as Linux keeps it).
func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .newlines)
}

@Suite("The loop thread as a task executor")
struct TaskExecutorTests {
    /// The loop threads' name: itself with one loop, `courier-exec-<index>` with several.
    static let threadName = "courier-exec"

    @Test("tasks that prefer it resume on the loop thread after each transfer, child tasks too")
    func resumesOnTheLoopThread() async throws {
        var configuration = CurlTransport.Configuration()
        configuration.threadName = Self.threadName
        try await withLoopback(configuration: configuration) { server, transport in
            try await withTaskExecutorPreference(transport.taskExecutor) {
                for index in 0..<50 {
                    let response = try await transport.send(server.request("/bytes?n=\(index + 1)"))
                    #expect(response.body.count == index + 1)
                    #expect(currentThreadName().hasPrefix(Self.threadName))
                }
                try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    for index in 0..<200 {
                        group.addTask {
                            let size = 1_000 + index * 13
                            let response = try await transport.send(server.request("/bytes?n=\(size)"))
                            let intact = response.body.count == size && Payloads.isPattern(response.body)
                            #expect(intact)
                            return (response.body.count, currentThreadName())
                        }
                    }
                    var count = 0
                    for try await (_, name) in group {
                        #expect(name.hasPrefix(Self.threadName))
                        count += 1
                    }
                    #expect(count == 200)
                }
            }
            // Without the preference, the same transport resumes the task on the global executor.
            _ = try await transport.send(server.request("/json"))
            #expect(!currentThreadName().hasPrefix(Self.threadName))
        }
    }

    @Test("after shutdown, tasks that prefer it carry on elsewhere, and new transfers fail with shutDown")
    func afterShutdown() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let executor = transport.taskExecutor
        let code = await withTaskExecutorPreference(executor) {
            _ = try? await transport.send(server.request("/json"))
            await transport.shutdown()
            await Task.yield()  // queued after the loop stopped: runs on the global executor
            return await serviceError { _ = try await transport.send(server.request("/json")) }?.code
        }
        #expect(code == .shutDown)
        await server.stop()
    }
}
