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
    /// What undoes the server and its folder if the benchmark is interrupted.
    private var undo: [Cleanup.Token] = []

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
        guard
            let binaries = versions.compactMap(Int.init).sorted(by: >).map({ "\(root)/\($0)/bin" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0 + "/initdb")
            })
        else {
            print("PostgreSQL not found (install it with: apt-get install postgresql): skipping the fleet scenario")
            return nil
        }
        var user: String?
        let directory = NSTemporaryDirectory() + "courier-bench-postgres-\(getpid())"
        let folder = Cleanup.removes(directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 {
            guard let entry = getpwnam("postgres") else {
                throw BenchError("PostgreSQL: no postgres user to run it as")
            }
            user = "postgres"
            chown(directory, entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        // "postgres (PostgreSQL) 15.18 (Debian ...)" -> "PostgreSQL 15.18"
        let said = (try? capture(binaries + "/postgres", ["--version"])) ?? ""
        let version = "PostgreSQL " + (said.split(separator: " ").dropFirst(2).first.map(String.init) ?? "")
        let cluster = Postgres(
            port: try freePort(), directory: directory, version: version, binaries: binaries, user: user)
        // The server runs detached (`pg_ctl start`): its postmaster's pid is in its data folder.
        let data = cluster.data
        cluster.undo = [folder, Cleanup.register { stopPostmaster(data: data) }]
        do {
            try cluster.command(
                "initdb",
                ["-D", cluster.data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
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
                "pg_ctl",
                [
                    "-D", cluster.data, "-l", directory + "/server.log", "-w", "-t", "60", "-o", "-p \(cluster.port)",
                    "start",
                ])
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
        for token in undo { Cleanup.done(token) }
    }

    /// Runs one of the server's programs (as `postgres` when root) and waits for it; throws with
    /// its output when it fails.
    ///
    /// Started with `posix_spawn`, every descriptor but stdin, stdout and stderr closed, output to
    /// a file: Foundation's `Process` learns of an exit through a descriptor the child inherits,
    /// and the server `pg_ctl start` leaves running would keep it (and any pipe) open forever.
    private func command(_ name: String, _ arguments: [String]) throws {
        let log = directory + "/\(name).out"
        let program = user == nil ? binaries + "/" + name : "/usr/sbin/runuser"
        let argv = [program] + (user.map { ["-u", $0, "--", binaries + "/" + name] } ?? []) + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, program, &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw BenchError("PostgreSQL: cannot start \(name): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchError("PostgreSQL: \(name) failed: \(said.suffix(400))")
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
            dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
                unsafeBitCast(
                    $0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
            }
}

/// Stops the postmaster of the cluster in `data` at once (SIGQUIT: PostgreSQL's immediate
/// shutdown) and waits (5 s at most) until it has ended, for ``Cleanup``: the first line of its
/// `postmaster.pid` is its pid.
private func stopPostmaster(data: String) {
    guard let file = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
        let line = file.split(separator: "\n").first, let pid = Int32(line), pid > 0, kill(pid, SIGQUIT) == 0
    else { return }
    for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
}
