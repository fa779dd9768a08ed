import CourierCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for servers that tests run (nginx).
///
/// Foundation's `Process` does not suit a long-lived server started while other tests run:
/// the child inherits every descriptor that is not close-on-exec (curl's sockets, other
/// children's pipes), and `Process` learns that a child exited from a socket the child
/// inherits, so a sibling holding a copy of that socket, or a child closing it, leaves
/// `waitUntilExit()` spinning. Here the child gets stdin (a given descriptor or
/// `/dev/null`), stdout and stderr on `/dev/null`, every other descriptor closed, and no
/// blocked signals (test threads block some, and a shell's `wait` would inherit that).
public final class ChildProcess: Sendable {
    public let pid: Int32
    /// The wait status, once reaped.
    private let status = LockedValue<Int32?>(nil)

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `path` with `arguments` (after `argv[0]`), its stdin reading `standardInput` and
    /// its stdout writing to `standardOutput` (both `/dev/null` when `nil`).
    public static func spawn(
        _ path: String, _ arguments: [String], standardInput: Int32? = nil, standardOutput: Int32? = nil
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let standardOutput {
            posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw NginxServerError.commandFailed("posix_spawn \(path): \(String(cString: strerror(result)))")
        }
        return ChildProcess(pid: pid)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
    /// Glibc module does not declare (it needs `_GNU_SOURCE`). Without it, descriptors leak.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
                unsafeBitCast(
                    $0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
            }
        }()

    /// Whether the child has exited (it is reaped if so).
    public var hasExited: Bool { reap(blocking: false) != nil }

    /// Waits for the child to exit, off the cooperative pool; returns its exit code (128 +
    /// signal if a signal ended it).
    @discardableResult
    public func exit() async -> Int32 {
        (try? await offCooperativePool { self.wait() }) ?? 0
    }

    /// Waits for the child to exit on the calling thread; returns its exit code (128 + signal
    /// if a signal ended it).
    @discardableResult
    public func wait() -> Int32 {
        let status = reap(blocking: true) ?? 0
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Runs `path` to its end and returns its exit code and what it wrote to stdout. The
    /// waiting happens on a thread of its own, off the cooperative pool.
    public static func run(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: [UInt8]) {
        try await offCooperativePool { try runBlocking(path, arguments) }
    }

    /// ``run(_:_:)`` on the calling thread, for set-ups that cannot be async.
    public static func runBlocking(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: [UInt8]) {
        let pipe = OutputPipe()
        let child = try spawn(path, arguments, standardOutput: pipe.writeEnd)
        pipe.closeWriteEnd()
        let output = pipe.readToEnd()
        return (child.wait(), output)
    }

    /// The child's wait status once it exited (nil before). The wait happens outside the lock,
    /// so that a blocking `wait()` never holds up `hasExited` on another thread; when two
    /// threads wait at once, the one the kernel does not answer (`ECHILD`) reads the other's
    /// result.
    private func reap(blocking: Bool) -> Int32? {
        if let known = status.withLock({ $0 }) { return known }
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &raw, blocking ? 0 : WNOHANG) } while result == -1 && errno == EINTR
        if result == pid {
            status.withLock { $0 = raw }
            return raw
        }
        guard result == -1, errno == ECHILD else { return nil }
        for _ in 0..<1_000 {  // the other waiter stores its status in a moment
            if let known = status.withLock({ $0 }) { return known }
            usleep(1_000)
        }
        return nil
    }
}

/// A pipe whose write end a child gets as its stdout.
public final class OutputPipe {
    private var ends: [Int32] = [-1, -1]

    public init() {
        // Children get only 0, 1 and 2 (`spawn` closes the rest), so no close-on-exec is needed.
        precondition(pipe(&ends) == 0, "pipe failed (errno \(errno))")
    }

    deinit {
        for end in ends where end >= 0 { close(end) }
    }

    /// The end the child writes to (duplicated into the child's stdout).
    public var writeEnd: Int32 { ends[1] }

    /// Closes the parent's copy of the write end, so that reads end when the child exits.
    public func closeWriteEnd() {
        if ends[1] >= 0 { close(ends[1]) }
        ends[1] = -1
    }

    /// Reads up to the first newline (included) or the end, off the cooperative pool.
    public func line() async -> [UInt8] {
        let end = ends[0]
        return (try? await offCooperativePool { Self.readLine(from: end) }) ?? []
    }

    /// Reads up to the first newline (included) or the end, on the calling thread.
    public func readLine() -> [UInt8] { Self.readLine(from: ends[0]) }

    private static func readLine(from end: Int32) -> [UInt8] {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(end, &byte, 1) == 1 {
            line.append(byte)
            if byte == UInt8(ascii: "\n") { break }
        }
        return line
    }

    /// Reads until the write end is closed everywhere.
    public func readToEnd() -> [UInt8] {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count > 0 {
                output += buffer[..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return output
            }
        }
    }
}
