import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of a test's own: `initdb` in a temporary directory, the server on a free
/// loopback port with trust authentication, superuser `postgres`, database `postgres`.
///
/// PostgreSQL refuses to run as root, so when the tests run as root (CI does) every server
/// command runs as the `postgres` user (`runuser -u postgres --`), which owns the directory.
/// Every blocking wait (the commands, polling for a killed server to vanish) runs off the
/// cooperative pool.
public final class PostgresCluster: Sendable {
    /// The loopback port the server listens on (kept across ``restart()``).
    public let port: Int
    /// The temporary directory: `data/` (the cluster), `server.log`, the Unix socket.
    public let directory: String
    private let binaries: String
    /// The user server commands run as (nil: the current user).
    private let user: String?

    /// The cluster's superuser.
    public static let superuser = "postgres"
    /// The database every cluster has.
    public static let database = "postgres"

    private init(port: Int, directory: String, binaries: String, user: String?) {
        self.port = port
        self.directory = directory
        self.binaries = binaries
        self.user = user
    }

    /// The data directory.
    public var dataDirectory: String { directory + "/data" }

    /// The file holding the PID of the cluster's watchdog (see ``start(owner:)``).
    public var watchdogFile: String { directory + "/watchdog.pid" }

    /// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`, if any.
    public static let binaryDirectory: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted(by: >).map { "\(root)/\($0)/bin" }.first {
            FileManager.default.isExecutableFile(atPath: $0 + "/initdb")
                && FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl")
        }
    }()

    /// Whether PostgreSQL tests run here: the binaries are installed, or `CI=true` (where a
    /// missing installation must fail the tests, not skip them).
    public static var testsCanRun: Bool {
        binaryDirectory != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Why PostgreSQL tests are skipped when ``testsCanRun`` is false.
    public static let skipReason =
        "PostgreSQL is not installed (scripts/test.sh installs it: apt-get install postgresql)"

    /// Creates and starts a cluster. Throws ``PostgresClusterError`` when PostgreSQL is missing
    /// or will not start (the error carries the server's log).
    ///
    /// A watchdog outlives `owner` (the calling process when nil): once that process is gone
    /// (it crashed, or was killed before ``remove()``), the watchdog stops the server and
    /// removes the directory; once the directory is gone, it ends.
    public static func start(owner process: Int32? = nil) async throws -> PostgresCluster {
        guard let binaries = binaryDirectory else { throw PostgresClusterError.notInstalled }
        var user: String?
        var owner: (uid: uid_t, gid: gid_t)?
        if geteuid() == 0 {
            guard let entry = getpwnam("postgres") else { throw PostgresClusterError.noServiceUser }
            user = "postgres"
            owner = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        // Named after the test process, so that scripts/test.sh can tell a cluster whose process
        // is gone (it crashed or was stopped) and remove it.
        let directory = NSTemporaryDirectory().appending("courier-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let owner, chown(directory, owner.uid, owner.gid) != 0 {
            throw PostgresClusterError.commandFailed("chown \(directory)", output: "errno \(errno)")
        }
        do {
            try await watch(directory, owner: process ?? getpid(), as: user, binaries: binaries)
            try await run(
                as: user, binaries + "/initdb",
                ["-D", directory + "/data", "-U", superuser, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
            let settings = """

                listen_addresses = '127.0.0.1'
                unix_socket_directories = '\(directory)'
                fsync = off
                full_page_writes = off
                max_connections = 60
                shared_buffers = 16MB

                """
            let configuration = FileHandle(forWritingAtPath: directory + "/data/postgresql.conf")
            configuration?.seekToEndOfFile()
            configuration?.write(Data(settings.utf8))
            try configuration?.close()
            // A port found free may be taken before the server binds it: try others.
            var attempt = 0
            while true {
                attempt += 1
                let cluster = PostgresCluster(
                    port: try LocalPort.free(1)[0], directory: directory, binaries: binaries, user: user)
                do {
                    try await cluster.restart()
                    return cluster
                } catch let error as PostgresClusterError where attempt < 3 && error.isPortTaken {
                    continue
                }
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Starts the watchdog of the cluster in `directory`: a shell in a session of its own (so
    /// that no signal to the test's process group reaches it), reparented to init at once,
    /// which checks every 200 ms whether `owner` still runs (a zombie does not: an orphaned
    /// test process may never be reaped) and the directory still exists. Its PID is in
    /// ``watchdogFile``.
    private static func watch(_ directory: String, owner: pid_t, as user: String?, binaries: String) async throws {
        let stop =
            (user.map { "/usr/sbin/runuser -u \($0) -- " } ?? "") + "\"$2\"/pg_ctl -D \"$1/data\" -m immediate -w stop"
        let script = """
            exec </dev/null >/dev/null 2>&1
            echo $$ > "$1/watchdog.pid"
            runs() { stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; stat=${stat##*) }; [ "${stat%% *}" != Z ]; }
            while [ -d "$1" ] && runs "$3"; do sleep 0.2; done
            [ -d "$1" ] || exit 0
            \(stop) || {
                postmaster=$(head -n 1 "$1/data/postmaster.pid")
                [ -n "$postmaster" ] && kill -9 "$postmaster"
            }
            rm -rf "$1"
            """
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/setsid", ["-f", "/bin/sh", "-c", script, "watchdog", directory, binaries, "\(owner)"])
        guard status == 0 else {
            throw PostgresClusterError.commandFailed(
                "setsid (watchdog)", output: String(decoding: output, as: UTF8.self))
        }
    }

    /// Starts the server (again) on the same port and data directory, waiting until it accepts
    /// connections (after ``kill()``, that includes crash recovery).
    public func restart() async throws {
        try await Self.run(
            as: user, binaries + "/pg_ctl",
            ["-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "60", "-o", "-p \(port)", "start"],
            log: directory + "/server.log")
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`), waiting until it has.
    public func stop() async throws {
        try await Self.run(as: user, binaries + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"])
    }

    /// Crashes the server: SIGKILL to the postmaster and each of its processes, then waits until
    /// they are gone, so that ``restart()`` can follow at once (and recovers from the crash).
    public func kill() async throws {
        guard let postmaster = postmasterPID() else { throw PostgresClusterError.notRunning }
        let processes = [postmaster] + Self.children(of: postmaster)
        for pid in processes { Glibc.kill(pid, SIGKILL) }
        try await offCooperativePool {
            // They are reaped by init; a zombie holds no shared memory, so it counts as gone.
            let deadline = Date().addingTimeInterval(10)
            while processes.contains(where: Self.isAlive), Date() < deadline { usleep(10_000) }
        }
        guard !processes.contains(where: Self.isAlive) else {
            throw PostgresClusterError.commandFailed("kill -9 \(processes)", output: "processes still alive after 10 s")
        }
        // The server would take a zombie's PID in a lock file for a live postmaster (init reaps
        // the killed processes when it gets to it).
        for lock in [
            dataDirectory + "/postmaster.pid", directory + "/.s.PGSQL.\(port).lock", directory + "/.s.PGSQL.\(port)",
        ] {
            try? FileManager.default.removeItem(atPath: lock)
        }
    }

    /// Stops the server (at once) and removes the directory. Call it when done, also on failure.
    public func remove() async {
        if postmasterPID() != nil {
            _ = try? await Self.run(
                as: user, binaries + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `sql` with `psql` as the superuser; returns its unaligned, tuples-only output.
    @discardableResult
    public func psql(_ sql: String, database: String = PostgresCluster.database) async throws -> String {
        let output = try await Self.run(
            as: nil, binaries + "/psql",
            [
                "-h", "127.0.0.1", "-p", "\(port)", "-U", Self.superuser, "-d", database, "-v", "ON_ERROR_STOP=1",
                "-X", "-q", "-t", "-A", "-c", sql,
            ])
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `psql` running `sql` as the superuser and returns at once (a session that holds a
    /// lock for a while, say); wait for it with ``ChildProcess/exit()``.
    public func psqlInBackground(_ sql: String, database: String = PostgresCluster.database) throws -> ChildProcess {
        try ChildProcess.spawn(
            binaries + "/psql",
            ["-h", "127.0.0.1", "-p", "\(port)", "-U", Self.superuser, "-d", database, "-X", "-q", "-c", sql])
    }

    /// The postmaster's PID from `postmaster.pid`, when the file exists.
    private func postmasterPID() -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Processes whose parent is `parent` (from `/proc/<pid>/stat`).
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // After "(comm)": state, then the parent's PID.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent
        }
    }

    /// Whether `pid` runs (exists and is not a zombie).
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }

    /// Runs `path` (as `user` when given) to its end, off the cooperative pool; throws with its
    /// output (and `log`'s tail) unless it exits with 0.
    @discardableResult
    private static func run(as user: String?, _ path: String, _ arguments: [String], log: String? = nil)
        async throws -> String
    {
        // stderr joins stdout, so that a failure says why.
        let command = (user.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [path] + arguments
        let (status, output) = try await ChildProcess.run("/bin/sh", ["-c", "exec \"$@\" 2>&1", "sh"] + command)
        var text = String(decoding: output, as: UTF8.self)
        guard status == 0 else {
            if let log, let logText = try? String(contentsOfFile: log, encoding: .utf8) {
                text += "\n" + logText.split(separator: "\n").suffix(15).joined(separator: "\n")
            }
            throw PostgresClusterError.commandFailed(([path] + arguments).joined(separator: " "), output: text)
        }
        return text
    }
}

/// Why a ``PostgresCluster`` could not start or do what was asked.
public enum PostgresClusterError: Error, CustomStringConvertible {
    case notInstalled
    case noServiceUser
    case notRunning
    case commandFailed(String, output: String)

    /// Whether the server could not bind its port (another process took it).
    var isPortTaken: Bool {
        if case .commandFailed(_, let output) = self { return output.contains("Address already in use") }
        return false
    }

    public var description: String {
        switch self {
        case .notInstalled:
            "PostgreSQL is not installed: no /usr/lib/postgresql/<version>/bin/initdb "
                + "(scripts/test.sh installs it; or: apt-get install postgresql)"
        case .noServiceUser:
            "running as root needs a `postgres` user to run the server as (the postgresql package creates it)"
        case .notRunning: "the cluster's server is not running"
        case .commandFailed(let command, let output): "\(command) failed:\n\(output)"
        }
    }
}
