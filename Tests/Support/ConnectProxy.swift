import CourierCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP proxy for tests that only tunnels: it answers `CONNECT host:port` with a 200 head
/// of its own (with a `Proxy-Agent` field) and then relays bytes both ways, as proxies do for
/// HTTPS. Plain sockets and a thread per tunnel: a test opens a handful.
///
public final class ConnectProxy: Sendable {
    public let port: Int
    private let listener: LoopbackListener
    private let targets: LockedValue<[String]>

    /// The `host:port` of every tunnel asked for, in order.
    public var tunnels: [String] { targets.withLock { $0 } }

    /// Listens on 127.0.0.1 (a free port) and starts accepting.
    public init() throws {
        let targets = LockedValue<[String]>([])
        self.targets = targets
        listener = try LoopbackListener { client in Self.tunnel(client, targets: targets) }
        port = listener.port
    }

    /// Stops accepting; tunnels open now end when either side closes.
    public func stop() { listener.stop() }

    private static func tunnel(_ client: Int32, targets: LockedValue<[String]>) {
        defer { close(client) }
        // The request head, up to its blank line.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while head.count < 8192, read(client, &byte, 1) == 1 {
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard requestLine.count == 3, requestLine[0] == "CONNECT",
            let colon = requestLine[1].lastIndex(of: ":"),
            let targetPort = UInt16(requestLine[1][requestLine[1].index(after: colon)...])
        else {
            reply(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        }
        targets.withLock { $0.append(String(requestLine[1])) }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return }
        defer { close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = targetPort.bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            reply(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        }
        reply(client, "HTTP/1.1 200 Connection established\r\nProxy-Agent: courier-test-proxy\r\n\r\n")
        relay(client, upstream)
    }

    /// Copies bytes both ways until either side closes.
    private static func relay(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let ready = poll(&fds, 2, 10_000)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return }
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let from = entry.fd
                let to = index == 0 ? b : a
                let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                var sent = 0
                while sent < count {
                    // MSG_NOSIGNAL: a peer that left must not kill the test process with SIGPIPE.
                    let written = buffer.withUnsafeBytes {
                        Glibc.send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                    }
                    guard written > 0 else { return }
                    sent += written
                }
            }
        }
    }

    private static func reply(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
