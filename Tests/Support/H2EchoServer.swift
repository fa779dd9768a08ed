import CourierCore
import Foundation

/// An HTTP/2 server over cleartext with prior knowledge (h2c), for what the suite's nginx
/// cannot show: a duplex echo (nginx holds an upstream's answer until the request body is
/// whole) and trailers on HTTP/2 (nginx 1.22 sends none). It is `h2-echo.py` beside this file,
/// on the `h2` library (Debian's `python3-h2`, installed by `scripts/test.sh`); its routes are
/// described there: `POST /duplex` and `GET /trailers?kind=`.
///
/// The script exits when its stdin closes: on ``stop()``, or when the test process dies.
public final class H2EchoServer: Sendable {
    public let port: Int
    private let process: ChildProcess
    /// The write end of the script's stdin, closed once by ``stop()``.
    private let lifeline: Int32
    private let stopped = LockedValue(false)

    /// Debian's interpreter, which has `python3-h2` (a `python3` earlier on `PATH` may not).
    public static let interpreter = "/usr/bin/python3"

    private init(port: Int, process: ChildProcess, lifeline: Int32) {
        self.port = port
        self.process = process
        self.lifeline = lifeline
    }

    /// `127.0.0.1:<port>`.
    public var authority: String { "127.0.0.1:\(port)" }

    /// Starts the script and returns once it listens (it prints its port after binding).
    public static func start() async throws -> H2EchoServer {
        try await offCooperativePool { try startBlocking() }
    }

    private static func startBlocking() throws -> H2EchoServer {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("h2-echo.py")
            .path
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw NginxServerError.commandFailed("pipe") }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let output = OutputPipe()
        let process: ChildProcess
        do {
            process = try ChildProcess.spawn(
                interpreter, [script], standardInput: pipe[0], standardOutput: output.writeEnd)
            close(pipe[0])
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        output.closeWriteEnd()
        let line = String(decoding: output.readLine(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let server = H2EchoServer(port: Int(line) ?? 0, process: process, lifeline: pipe[1])
        guard Int(line) != nil else {
            server.stop()
            throw NginxServerError.didNotStart(
                "h2-echo.py printed no port (is python3-h2 installed? scripts/test.sh installs it)")
        }
        return server
    }

    deinit { stop() }

    /// Stops the server. Safe to call more than once.
    public func stop() {
        guard
            stopped.withLock({ stopped in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        close(lifeline)
        if !process.hasExited { kill(process.pid, SIGTERM) }
        process.wait()
    }
}
