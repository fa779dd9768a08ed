import CourierCore
import Foundation

/// nginx speaking HTTP/2 over TLS on 127.0.0.1, for tests of the transport's HTTP/2 path
/// (the NIO ``TestServer`` speaks HTTP/1.1 only). Everything it needs lives in a temporary
/// directory made at start: a test certificate authority and a server certificate signed by
/// it (the `openssl` CLI), the configuration, pid file, logs and temp paths, so it runs as
/// root or not and never touches `/var`.
///
/// Two listeners, both `ssl http2`:
/// - ``port``: `GET /echo/<anything>` answers `<protocol> <connection> <request number> <uri>`
///   as nginx sees them (`$server_protocol $connection $connection_requests $request_uri`),
///   so a test can tell from the bodies which connection served which stream;
///   `GET /json` answers a small JSON object; `GET /reset` resets its stream (`return 444`,
///   which nginx turns into `RST_STREAM` with `PROTOCOL_ERROR` on HTTP/2, leaving the
///   connection and its other streams alone).
/// - ``goAwayPort``: the same routes, but each connection serves at most
///   ``requestsBeforeGoAway`` requests (`keepalive_requests`); then nginx sends `GOAWAY`
///   and streams past its last stream id are refused.
///
/// nginx runs in the foreground (`daemon off`) with a watcher process that holds the read
/// end of a pipe: when the test process closes the write end (``stop()``, `deinit`) or
/// dies, the watcher stops nginx, so no server outlives its test.
public final class NginxServer: Sendable {
    /// The temporary directory holding certificates, configuration and logs.
    public let directory: String
    /// The main listener's port.
    public let port: Int
    /// The port of the listener that sends `GOAWAY` after ``requestsBeforeGoAway`` requests.
    public let goAwayPort: Int
    /// The test certificate authority (PEM) that signed the server's certificate.
    public let certificateAuthorityFile: String
    private let process: ChildProcess
    /// The write end of the pipe whose closing stops nginx (closed once, by `stop`).
    private let lifeline: Int32
    private let stopped = LockedValue(false)

    /// Requests one connection to ``goAwayPort`` serves before nginx sends `GOAWAY`.
    public static let requestsBeforeGoAway = 10

    /// nginx's path, or `nil` when it is not installed (`scripts/test.sh` installs it).
    public static let binary: String? = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    private init(
        directory: String, ports: (main: Int, goAway: Int), certificateAuthorityFile: String, process: ChildProcess,
        lifeline: Int32
    ) {
        self.directory = directory
        (port, goAwayPort) = ports
        self.certificateAuthorityFile = certificateAuthorityFile
        self.process = process
        self.lifeline = lifeline
    }

    /// `127.0.0.1:<port>`, the main listener.
    public var authority: String { "127.0.0.1:\(port)" }
    /// `127.0.0.1:<goAwayPort>`.
    public var goAwayAuthority: String { "127.0.0.1:\(goAwayPort)" }

    /// Makes the certificates and configuration, starts nginx and returns once both
    /// listeners accept connections. The waiting (openssl, nginx's start) happens on a
    /// thread of its own, not on the cooperative pool the tests share.
    public static func start() async throws -> NginxServer {
        try await offCooperativePool { try startBlocking() }
    }

    private static func startBlocking() throws -> NginxServer {
        guard let binary else { throw NginxServerError.notInstalled }
        let directory = NSTemporaryDirectory() + "courier-nginx-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/temp", withIntermediateDirectories: true)
        do {
            let authority = try makeCertificates(in: directory)
            // A port found free may be taken before nginx binds it: try again with others.
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try launch(binary, in: directory, certificateAuthorityFile: authority)
                } catch NginxServerError.portTaken where attempt < 3 {
                    continue
                }
            }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private static func launch(_ binary: String, in directory: String, certificateAuthorityFile: String) throws
        -> NginxServer
    {
        let found = try LocalPort.free(2)
        let ports = (main: found[0], goAway: found[1])
        try configuration(directory: directory, ports: ports)
            .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        for file in ["error.log", "nginx.pid"] { try? FileManager.default.removeItem(atPath: directory + "/" + file) }
        var pipe: [Int32] = [0, 0]
        // Close-on-exec, so that no other child inherits the write end (a window remains for
        // children that Foundation's `Process` starts in between: `stop` also signals nginx).
        guard Glibc.pipe(&pipe) == 0 else { throw NginxServerError.commandFailed("pipe") }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let process: ChildProcess
        do {
            process = try ChildProcess.spawn("/bin/sh", ["-c", launcher, binary, directory], standardInput: pipe[0])
            close(pipe[0])
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        let server = NginxServer(
            directory: directory, ports: ports, certificateAuthorityFile: certificateAuthorityFile, process: process,
            lifeline: pipe[1])
        do {
            try server.waitUntilListening()
            return server
        } catch {
            server.stop(removingFiles: false)
            throw error
        }
    }

    /// The launcher script (`$0` is nginx, `$1` the directory): it forks a watcher that holds
    /// the pipe on stdin, then becomes nginx (`exec`: the child is nginx's master). The watcher
    /// sends nginx SIGTERM when the pipe closes: on `stop()`, or when the test process dies.
    private static let launcher = #"""
        exec 3<&0
        (read _ <&3; kill -TERM $$) &
        exec "$0" -p "$1" -c "$1/nginx.conf" -e "$1/error.log" 3<&- </dev/null
        """#

    /// Waits (10 s at most) until nginx listens, or reports why it cannot. nginx writes its
    /// pid file only after it has bound and opened every listening socket, so a pid file
    /// means connections are accepted (they queue until a worker takes them).
    private func waitUntilListening() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let log = errorLog
            if log.contains("Address already in use") { throw NginxServerError.portTaken }
            if log.contains("[emerg]") || process.hasExited { throw NginxServerError.didNotStart(log) }
            let pid = (try? String(contentsOfFile: directory + "/nginx.pid", encoding: .utf8)) ?? ""
            if pid.hasSuffix("\n") { return }
            usleep(5_000)
        }
        throw NginxServerError.didNotStart("no pid file after 10 s. " + errorLog)
    }

    /// nginx's error log so far.
    public var errorLog: String { (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "" }

    deinit { stop() }

    /// Stops nginx and removes its directory. Safe to call more than once.
    public func stop() { stop(removingFiles: true) }

    private func stop(removingFiles: Bool) {
        guard
            stopped.withLock({ stopped in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        close(lifeline)
        if !process.hasExited { kill(process.pid, SIGTERM) }
        process.wait()
        if removingFiles { try? FileManager.default.removeItem(atPath: directory) }
    }
}

/// Why nginx could not be started.
public enum NginxServerError: Error, CustomStringConvertible {
    case notInstalled
    case portTaken
    case didNotStart(String)
    case commandFailed(String)

    public var description: String {
        switch self {
        case .notInstalled: "nginx is not installed (scripts/test.sh installs it; or: apt-get install nginx)"
        case .portTaken: "nginx could not bind its port"
        case .didNotStart(let log): "nginx did not start: \(log.suffix(600))"
        case .commandFailed(let command): "command failed: \(command)"
        }
    }
}
