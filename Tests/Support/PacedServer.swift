import CourierCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.1 server for tests that need to control when the request body is read:
/// it reads a request's head, then its body at a set pace (or only part of it), then stays
/// silent for a while before it answers. Plain sockets and a thread per connection, with a
/// small receive buffer, so that the client's send queue shows the server's pace. The NIO test
/// server reads every body as fast as it can.
///
public final class PacedServer: Sendable {
    /// What the server does with each request.
    public struct Script: Sendable {
        /// Body bytes read before going silent; `nil` reads the whole body.
        public var bodyBytesRead: Int?
        /// Body bytes read at a time.
        public var piece = 64 << 10
        /// Pause between two pieces.
        public var pause: Duration = .zero
        /// What the server sends once it read what it reads, before its silence: nothing, a head,
        /// a head and part of its body.
        public var prefix = ""
        /// Silence after the prefix. Then, without a prefix, a complete answer (`ok`); with one,
        /// the connection closes.
        public var silence: Duration = .zero

        /// A head promising 1,000 bytes of body.
        public static let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"

        public init(
            bodyBytesRead: Int? = nil, piece: Int = 64 << 10, pause: Duration = .zero, prefix: String = "",
            silence: Duration = .zero
        ) {
            self.bodyBytesRead = bodyBytesRead
            self.piece = piece
            self.pause = pause
            self.prefix = prefix
            self.silence = silence
        }
    }

    public let port: Int
    private let listener: LoopbackListener
    private let log: Log

    /// What the connection threads record.
    private final class Log: Sendable {
        let received = LockedValue<[Int]>([])
        let silences = LockedValue<[ContinuousClock.Instant]>([])
    }

    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// `127.0.0.1:<port>`
    public var authority: String { "127.0.0.1:\(port)" }
    /// The body bytes read from each request that was read to its end, in order.
    public var bodiesRead: [Int] { log.received.withLock { $0 } }
    /// When each silence began (after the server's last read or write), in order.
    public var silenceStarts: [ContinuousClock.Instant] { log.silences.withLock { $0 } }

    /// Listens on 127.0.0.1 (a free port) and starts accepting. A small receive buffer (16 KiB,
    /// inherited by accepted sockets), so that the client's bytes wait in its own send queue
    /// until this server reads them.
    public init(script: Script) throws {
        let log = Log()
        self.log = log
        listener = try LoopbackListener(receiveBuffer: 16 << 10) { client in
            Self.serve(client, script: script, log: log)
        }
        port = listener.port
    }

    /// `POLLRDHUP` (Linux), which Glibc's module does not export: the peer closed its side.
    private static let peerClosed: Int16 = 0x2000

    /// Stops accepting; connections still open end when their client closes or their script ends.
    public func stop() { listener.stop() }

    deinit { stop() }

    private static func serve(_ client: Int32, script: Script, log: Log) {
        defer { close(client) }
        // The head, up to its blank line.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while head.count < 16 << 10 {
            guard read(client, &byte, 1) == 1 else { return }
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        let text = String(decoding: head, as: UTF8.self).lowercased()
        let length =
            text.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let target = min(length, script.bodyBytesRead ?? length)
        var buffer = [UInt8](repeating: 0, count: max(script.piece, 1))
        var total = 0
        while total < target {
            let count = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, min($0.count, target - total)) }
            guard count > 0 else { return }
            total += count
            if script.pause > .zero && total < target { Thread.sleep(forTimeInterval: script.pause.seconds) }
        }
        if total == length { log.received.withLock { $0.append(total) } }
        if !script.prefix.isEmpty, !sendAll(Array(script.prefix.utf8), to: client) { return }
        // Silent until the time is up or the client goes away, whichever comes first.
        log.silences.withLock { $0.append(.now) }
        if script.silence > .zero, !clientStays(client, for: script.silence) { return }
        let rest = script.prefix.isEmpty ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok" : ""
        _ = sendAll(Array(rest.utf8), to: client)
    }

    private static func sendAll(_ bytes: [UInt8], to client: Int32) -> Bool {
        bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) == $0.count }
    }

    /// Waits up to `duration`; false if the client closed meanwhile (unread body bytes do not count).
    private static func clientStays(_ client: Int32, for duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while true {
            let remaining = deadline - .now
            if remaining <= .zero { return true }
            var descriptor = pollfd(fd: client, events: Self.peerClosed, revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, remaining.seconds * 1000)))
            if ready > 0 { return false }
            if ready < 0 && errno != EINTR { return false }
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
