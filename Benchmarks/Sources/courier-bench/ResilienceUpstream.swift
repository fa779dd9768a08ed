import Foundation
import Glibc
import Synchronization

/// The resilience rows' upstream, in a child process (`courier-bench --resilience-upstream`):
/// an HTTP/1.1 server on 127.0.0.1 whose answer each row picks by path, one thread per
/// connection (a stalled connection parks only its own thread).
///
/// - `/ok`: 200 with a small JSON body;
/// - `/fail`: 503, every time;
/// - `/switch`: 503 while the server is down, 200 while it is up (`/control/down`, `/control/up`);
/// - `/stall`: the head of a 200, then nothing until the client goes;
/// - `/congested`: a 200 after 2 ms with up to 4 requests at once, and after 2 ms × (at once /
///   4)² past that: an upstream whose answers slow down faster than its load grows, so that
///   throughput falls past its capacity;
/// - `/tail`: a 200 at once, but one answer in 20 (at random) after 200 ms: a slow replica's
///   share of a host's answers;
/// - `/control/counts`: the requests per path since the last `/control/reset`, as JSON.
final class ResilienceUpstream: Sendable {
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var up = false
        var counts: [String: Int] = [:]
        var atOnce = 0
    }

    init() throws {
        listener = try LoopbackServer.listen("upstream")
    }

    var port: Int { LoopbackServer.port(of: listener) }

    func start() {
        LoopbackServer.accept(on: listener) { [self] connection in serve(connection) }
    }

    private func serve(_ connection: Int32) {
        LoopbackServer.serveRequests(on: connection) { _, target in
            answer(String(target.prefix { $0 != "?" }), on: connection)
        }
    }

    /// Writes the answer for `path`; returns whether the connection stays usable.
    private func answer(_ path: String, on connection: Int32) -> Bool {
        let ok = #"{"id":7,"name":"upstream"}"#
        switch path {
        case "/control/up", "/control/down":
            state.withLock { $0.up = path == "/control/up" }
            return write(200, "{}", to: connection)
        case "/control/reset":
            state.withLock { $0.counts = [:] }
            return write(200, "{}", to: connection)
        case "/control/counts":
            let counts = state.withLock { $0.counts }
            let body = (try? JSONEncoder().encode(counts)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return write(200, body, to: connection)
        default:
            break
        }
        let up = state.withLock { state in
            state.counts[path, default: 0] += 1
            return state.up
        }
        switch path {
        case "/ok": return write(200, ok, to: connection)
        case "/congested":
            let atOnce = state.withLock { state in
                state.atOnce += 1
                return state.atOnce
            }
            let factor = max(1, Double(atOnce) / 4)
            usleep(UInt32(2_000 * factor * factor))
            state.withLock { $0.atOnce -= 1 }
            return write(200, ok, to: connection)
        case "/tail":
            if Int.random(in: 0..<20) == 0 { usleep(200_000) }
            return write(200, ok, to: connection)
        case "/switch": return up ? write(200, ok, to: connection) : write(503, #"{"error":"down"}"#, to: connection)
        case "/stall":
            guard send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", to: connection) else { return false }
            var scratch = [UInt8](repeating: 0, count: 4096)
            while scratch.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
            return false
        default: return write(503, #"{"error":"failing"}"#, to: connection)
        }
    }

    private func write(_ status: Int, _ body: String, to connection: Int32) -> Bool {
        let reason = status == 200 ? "OK" : "Service Unavailable"
        return send(
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                + body, to: connection)
    }

    private func send(_ text: String, to connection: Int32) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(connection, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }
}

/// The child's side: serves until standard input reaches its end.
func runResilienceUpstream() throws -> Never {
    signal(SIGPIPE, SIG_IGN)
    let server = try ResilienceUpstream()
    server.start()
    FileHandle.standardOutput.write(Data("port \(server.port)\n".utf8))
    var byte: UInt8 = 0
    while read(STDIN_FILENO, &byte, 1) != 0 {}
    exit(0)
}

/// The parent's side: the child started, its port read; ``stop()`` closes its input.
///
/// `@unchecked Sendable`: its stored properties are constants, set before it is shared, and
/// `stop()` (the only method) may run twice, from the scenario and from a signal's cleanup:
/// closing a closed pipe and waiting for an exited process do nothing.
final class ResilienceUpstreamProcess: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let input: Pipe

    var base: String { "http://127.0.0.1:\(port)" }

    init() throws {
        let child = try LoopbackServer.startChild(["--resilience-upstream"], name: "the resilience upstream")
        process = child.process
        input = child.input
        port = child.port
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
