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
final class ChildProcess: Sendable {
    let pid: pid_t
    /// The wait status, once reaped.
    private let status = LockedValue<Int32?>(nil)

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `path` with `arguments` (after `argv[0]`), its stdin reading `standardInput`.
    static func spawn(_ path: String, _ arguments: [String], standardInput: Int32? = nil) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw NginxServerError.commandFailed("posix_spawn \(path): \(String(cString: strerror(result)))")
        }
        return ChildProcess(pid: pid)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
    /// Glibc module does not declare (it needs `_GNU_SOURCE`). Without it, descriptors leak.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }
    }()

    /// Whether the child has exited (it is reaped if so).
    var hasExited: Bool { reap(blocking: false) != nil }

    /// Waits for the child to exit; returns its exit code (128 + signal if a signal ended it).
    @discardableResult
    func wait() -> Int32 {
        let status = reap(blocking: true) ?? 0
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    private func reap(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &raw, blocking ? 0 : WNOHANG) } while result == -1 && errno == EINTR
            if result == pid { status = raw }
            return status
        }
    }
}
