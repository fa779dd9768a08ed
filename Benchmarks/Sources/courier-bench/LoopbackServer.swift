import Foundation
import Glibc

/// What the benchmark's own HTTP servers (the soak's ``FaultServer``, the resilience rows'
/// ``ResilienceUpstream``) share: a listening socket on 127.0.0.1 and a thread per connection,
/// in a child process that prints `port N` once it listens.
enum LoopbackServer {
    /// A socket listening on 127.0.0.1, on a port the kernel picks.
    static func listen(_ name: String) throws -> Int32 {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard listener >= 0, bound, Glibc.listen(listener, 4096) == 0 else {
            throw BenchError("\(name): cannot listen")
        }
        return listener
    }

    /// The port `listener` listens on.
    static func port(of listener: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts connections on a thread of its own (`TCP_NODELAY` set), each served by `serve`
    /// on a new thread, after `accepted`.
    static func accept(
        on listener: Int32, accepted: @escaping @Sendable () -> Void = {},
        serve: @escaping @Sendable (Int32) -> Void
    ) {
        Thread.detachNewThread {
            while true {
                let connection = Glibc.accept(listener, nil, nil)
                if connection < 0 {
                    if errno == EINTR || errno == ECONNABORTED || errno == EMFILE { continue }
                    return
                }
                var yes: Int32 = 1
                setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
                accepted()
                Thread.detachNewThread { serve(connection) }
            }
        }
    }

    /// Reads request heads on `connection` (bodies are not expected) and hands each to
    /// `answer` with its target, until the peer closes it, a head is malformed or `answer`
    /// says the connection is done; then closes it.
    static func serveRequests(on connection: Int32, _ answer: (_ head: String, _ target: Substring) -> Bool) {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            guard let end = buffer.headEnd else {
                let received = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if received <= 0 { break }
                buffer.append(contentsOf: chunk[..<received])
                continue
            }
            let head = String(decoding: buffer[..<end], as: UTF8.self)
            buffer.removeSubrange(..<(end + 4))
            let requestLine = head.prefix { $0 != "\r\n" }.split(separator: " ")  // "\r\n" is one Character
            guard requestLine.count == 3, answer(head, requestLine[1]) else { break }
        }
        close(connection)
    }

    /// Starts this executable with `arguments` as a server child and reads the `port N` line it
    /// prints once it listens.
    static func startChild(
        _ arguments: [String], name: String
    ) throws -> (process: Process, input: Pipe, output: Pipe, port: Int) {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: CommandLine.executablePath)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("port "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw BenchError("\(name) did not start: \(text)")
        }
        return (process, input, output, port)
    }
}
