import Foundation
import Glibc

/// A PostgreSQL cluster of the benchmark's own, for the fleet scenario: `initdb` in a temporary
/// folder, the server on a free loopback port with trust authentication (superuser and database
/// `postgres`), durability off (`fsync`, `full_page_writes`), as a cache tier is run.
///
/// PostgreSQL refuses to run as root: as root, every server command runs as the `postgres`
/// user (`runuser`), which owns the folder.
final class Postgres {
    let port: Int
    let directory: String
    let version: String
    private let binaries: String
    private let user: String?

    private init(port: Int, directory: String, version: String, binaries: String, user: String?) {
        self.port = port
        self.directory = directory
        self.version = version
        self.binaries = binaries
        self.user = user
    }

    /// Starts a cluster, or returns nil (saying why) when PostgreSQL cannot be had.
    static func start() throws -> Postgres? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let binaries = versions.compactMap(Int.init).sorted(by: >).map({ "\(root)/\($0)/bin" }).first(where: {
            FileManager.default.isExecutableFile(atPath: $0 + "/initdb")
        }) else {
            print("PostgreSQL not found (install it with: apt-get install postgresql): skipping the fleet scenario")
            return nil
        }
        var user: String?
        let directory = NSTemporaryDirectory() + "courier-bench-postgres-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 {
            guard let entry = getpwnam("postgres") else { throw BenchError("PostgreSQL: no postgres user to run it as") }
            user = "postgres"
            chown(directory, entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        let version = (try? capture(binaries + "/postgres", ["--version"])) ?? "PostgreSQL"
        let cluster = Postgres(port: try freePort(), directory: directory, version: version, binaries: binaries, user: user)
        do {
            try cluster.command(
                "initdb", ["-D", cluster.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
            let settings = """

                listen_addresses = '127.0.0.1'
                unix_socket_directories = '\(directory)'
                fsync = off
                synchronous_commit = off
                full_page_writes = off
                max_connections = 100

                """
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: cluster.data + "/postgresql.conf"))
            try file.seekToEnd()
            try file.write(contentsOf: Data(settings.utf8))
            try file.close()
            try cluster.command(
                "pg_ctl", ["-D", cluster.data, "-l", directory + "/server.log", "-w", "-t", "60", "-o", "-p \(cluster.port)", "start"])
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    private var data: String { directory + "/data" }

    /// Stops the server at once and removes the folder.
    func stop() {
        try? command("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs one of the server's programs (as `postgres` when root); throws with its output when it fails.
    private func command(_ name: String, _ arguments: [String]) throws {
        let process = Process()
        let pipe = Pipe()
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--", binaries + "/" + name] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binaries + "/" + name)
            process.arguments = arguments
        }
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("PostgreSQL: \(name) failed: \(String(decoding: output, as: UTF8.self).suffix(400))")
        }
    }
}
