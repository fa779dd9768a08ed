import CRawCurl
import Foundation
import Glibc
import Synchronization

/// What the benchmark must undo however it ends: the servers it started (nginx, PostgreSQL) and
/// its temporary folders. Child processes (the measured clients, the soak's fault server) take
/// care of themselves: ``diesWithParent()``.
///
/// Interrupted (SIGINT), terminated (SIGTERM), hung up on or cut off (SIGHUP, SIGPIPE), the
/// benchmark undoes everything registered, newest first, and exits with 128 + the signal. The
/// signal handler only writes the signal's number to a pipe (a handler may call only
/// async-signal-safe functions); a thread of its own reads it and does the undoing, which may
/// stop a server and wait for it.
enum Cleanup {
    /// A registered undo, for ``done(_:)`` once the thing is undone the normal way.
    struct Token: Sendable { fileprivate let number: Int }

    private struct Registry {
        var next = 0
        var actions: [(number: Int, action: @Sendable () -> Void)] = []
    }

    private static let registry = Mutex(Registry())

    /// Runs `action` if the benchmark is interrupted before ``done(_:)`` is called with the token.
    @discardableResult
    static func register(_ action: @escaping @Sendable () -> Void) -> Token {
        registry.withLock { registry in
            registry.next += 1
            registry.actions.append((registry.next, action))
            return Token(number: registry.next)
        }
    }

    /// Removes `path` (a file or a folder) if the benchmark is interrupted before ``done(_:)``.
    @discardableResult
    static func removes(_ path: String) -> Token {
        register { try? FileManager.default.removeItem(atPath: path) }
    }

    /// The registered thing was undone the normal way: nothing to do for it any more.
    static func done(_ token: Token) {
        registry.withLock { $0.actions.removeAll { $0.number == token.number } }
    }

    /// Takes SIGINT, SIGTERM, SIGHUP and SIGPIPE from now on: each undoes what is registered and
    /// exits. Call once, before starting anything that needs undoing.
    static func takesSignals() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw BenchError("pipe() failed: errno \(errno)") }
        signalPipe.store(ends[1], ordering: .relaxed)
        let reader = ends[0]
        let thread = Thread {
            var signal: Int32 = 0
            while read(reader, &signal, MemoryLayout<Int32>.size) != MemoryLayout<Int32>.size {}
            undoEverything(exitingWith: signal)
        }
        thread.name = "courier-bench signals"
        thread.start()
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] {
            Glibc.signal(signal) { received in
                var received = received
                signalReceived.store(true, ordering: .relaxed)
                _ = write(signalPipe.load(ordering: .relaxed), &received, MemoryLayout<Int32>.size)
            }
        }
    }

    /// Returns at once, unless a signal has come: then the signal thread is undoing what is
    /// registered (stopping a server under a running scenario, which may be why the caller
    /// failed) and will exit with 128 + the signal, so the calling thread waits for that instead
    /// of reporting a failure and exiting with a status of its own.
    static func yieldsToSignal() {
        while signalReceived.load(ordering: .relaxed) { pause() }
    }

    /// Undoes everything registered, newest first, and exits with 128 + `signal`.
    private static func undoEverything(exitingWith signal: Int32) -> Never {
        let actions = registry.withLock { registry in
            defer { registry.actions.removeAll() }
            return registry.actions
        }
        for (_, action) in actions.reversed() { action() }
        let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
        FileHandle.standardError.write(
            Data("\ncourier-bench: \(name): its servers stopped and its folders removed\n".utf8))
        exit(128 + signal)
    }
}

/// Where the signal handler writes (atomics are async-signal-safe).
private let signalPipe = Atomic<Int32>(-1)

/// Set by the signal handler before it writes to the pipe, so that ``Cleanup/exit(_:)`` can
/// tell a failure caused by the undoing from one of its own.
private let signalReceived = Atomic<Bool>(false)

/// Makes this process (a client the benchmark started) end with SIGKILL when its parent ends,
/// however the parent ends; exits at once if the parent is already gone.
func diesWithParent() {
    if bench_die_with_parent() != 0 { exit(1) }
}
