#if PostgreSQL
import CourierTestServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The test support's clusters outlive no test process: a process that crashes or is killed
/// before it removes its cluster leaves no server or folder behind.
@Suite("PostgreSQL test clusters outlive no test process", postgresAvailable)
struct PostgresClusterWatchdogTests {
    @Test("a cluster whose owner is killed is stopped and removed", .timeLimit(.minutes(3)))
    func aClusterWhoseOwnerDiesIsRemoved() async throws {
        // The owner stands in for a test process: a child that is killed mid-test.
        let owner = try ChildProcess.spawn("/bin/sleep", ["120"])
        let cluster = try await PostgresCluster.start(owner: owner.pid)
        #expect(try await cluster.psql("SELECT 1") == "1")
        let postmaster = try postmasterPID(of: cluster)
        // Not reaped until the end: an orphaned test process may stay a zombie (its parent gone,
        // and init not reaping), which the watchdog must take for gone.
        kill(owner.pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(20)
        while FileManager.default.fileExists(atPath: cluster.directory) || isRunning(postmaster) {
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!FileManager.default.fileExists(atPath: cluster.directory), "the folder is removed")
        #expect(!isRunning(postmaster), "the server is stopped")
        _ = await owner.exit()
        await cluster.remove()
    }

    @Test("a removed cluster's watchdog ends", .timeLimit(.minutes(3)))
    func aRemovedClustersWatchdogEnds() async throws {
        let owner = try ChildProcess.spawn("/bin/sleep", ["120"])
        let cluster = try await PostgresCluster.start(owner: owner.pid)
        let text = try String(contentsOfFile: cluster.watchdogFile, encoding: .utf8)
        let watchdog = try #require(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(isRunning(watchdog))
        await cluster.remove()
        let deadline = ContinuousClock.now + .seconds(10)
        while isRunning(watchdog), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!isRunning(watchdog), "the watchdog ended with its folder")
        kill(owner.pid, SIGKILL)
        _ = await owner.exit()
    }

    private func postmasterPID(of cluster: PostgresCluster) throws -> pid_t {
        let text = try String(contentsOfFile: cluster.dataDirectory + "/postmaster.pid", encoding: .utf8)
        return try #require(text.split(separator: "\n").first.flatMap { pid_t($0) })
    }

    /// Whether `pid` runs (exists and is not a zombie).
    private func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }
}
#endif
