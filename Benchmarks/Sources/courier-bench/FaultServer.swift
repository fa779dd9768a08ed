import Foundation
import Glibc
import Synchronization

/// The soak's HTTP/1.1 server on 127.0.0.1: plain POSIX sockets, one thread per connection
/// (a stalled connection parks only its own thread), each answer chosen by ``Fault/choose``.
///
/// It runs in a child process of its own (`courier-bench --fault-server SEED`), so that its
/// threads, sockets and memory stay out of the figures the soak samples in the client.
final class FaultServer: Sendable {
    let seed: UInt64
    let payloads: SoakPayloads
    private let listener: Int32
    /// Requests seen per target: the attempt number of the next one.
    private let attempts = Mutex<[String: Int]>([:])
    private let counts = Mutex<FaultServerCounts>(FaultServerCounts())

    init(seed: UInt64) throws {
        self.seed = seed
        payloads = try SoakPayloads.make()
        listener = try LoopbackServer.listen("fault server")
    }

    /// The port the kernel gave the listening socket.
    var port: Int { LoopbackServer.port(of: listener) }

    var snapshot: FaultServerCounts {
        var snapshot = counts.withLock { $0 }
        snapshot.cpuSeconds = cpuSeconds()
        return snapshot
    }

    /// Accepts connections on a thread of its own, each served on a new thread.
    func start() {
        LoopbackServer.accept(
            on: listener, accepted: { [self] in counts.withLock { $0.connections += 1 } },
            serve: { [self] connection in serve(connection) })
    }

    /// Reads requests on one connection until the peer closes it or a fault ends it.
    private func serve(_ connection: Int32) {
        LoopbackServer.serveRequests(on: connection) { head, target in
            let acceptsGzip = head.lowercased().split(separator: "\r\n").contains {
                $0.hasPrefix("accept-encoding:") && $0.contains("gzip")
            }
            let attempt = attempts.withLock { table in
                defer { table[String(target), default: 0] += 1 }
                return table[String(target)] ?? 0
            }
            let fault = Fault.choose(seed: seed, target: target, attempt: attempt)
            counts.withLock { $0.record(fault) }
            return answer(fault, target: target, acceptsGzip: acceptsGzip, on: connection)
        }
    }

    /// Writes the answer for `fault`; returns whether the connection stays usable.
    private func answer(_ fault: Fault, target: Substring, acceptsGzip: Bool, on connection: Int32) -> Bool {
        let gzip = fault == .corruptGzip || fault == .truncatedGzip || (fault == .gzip && acceptsGzip)
        var body = payloads.body(for: target, gzip: gzip)
        switch fault {
        case .identity, .gzip:
            return write(head(200, length: body.count, gzip: gzip) + body, to: connection)
        case .identityThenClose:
            _ = write(head(200, length: body.count, gzip: false, extra: "Connection: close\r\n") + body, to: connection)
            return false
        case .stallBeforeHead:
            drain(connection)
            return false
        case .stallAfterHead:
            if write(head(200, length: body.count, gzip: false), to: connection) { drain(connection) }
            return false
        case .resetBeforeHead:
            reset(connection)
            return false
        case .resetInBody:
            _ = write(head(200, length: body.count, gzip: false) + body.prefix(body.count / 2), to: connection)
            reset(connection)
            return false
        case .truncatedBody:
            _ = write(head(200, length: body.count, gzip: false) + body.prefix(body.count / 2), to: connection)
            shutdown(connection, Int32(SHUT_WR))
            return false
        case .unavailableRetryNow, .unavailableRetryLater:
            let retry = fault == .unavailableRetryNow ? "0" : "1"
            let text = Data("unavailable\n".utf8)
            return write(
                head(503, length: text.count, gzip: false, extra: "Retry-After: \(retry)\r\n") + text, to: connection)
        case .corruptGzip:
            let middle = body.startIndex + body.count / 2
            for index in middle..<min(middle + 16, body.endIndex) { body[index] ^= 0x5A }
            return write(head(200, length: body.count, gzip: true) + body, to: connection)
        case .truncatedGzip:
            let half = body.prefix(body.count / 2)
            return write(head(200, length: half.count, gzip: true) + half, to: connection)
        }
    }

    private func head(_ status: Int, length: Int, gzip: Bool, extra: String = "") -> Data {
        let reason = status == 200 ? "OK" : "Service Unavailable"
        let encoding = gzip ? "Content-Encoding: gzip\r\n" : ""
        return Data(
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\n\(encoding)\(extra)Content-Length: \(length)\r\n\r\n"
                .utf8)
    }

    private func write(_ data: Data, to connection: Int32) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = send(connection, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Reads and drops whatever comes until the peer closes the connection (a stall).
    private func drain(_ connection: Int32) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while chunk.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
    }

    /// Makes the coming `close` send a RST instead of a FIN.
    private func reset(_ connection: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}

/// What the fault server did, printed as one JSON line when it stops.
struct FaultServerCounts: Codable, Sendable {
    var connections = 0
    var requests = 0
    var faults: [String: Int] = [:]
    /// The server's CPU time: next to the client's, it shows whether the server kept up.
    var cpuSeconds = 0.0

    mutating func record(_ fault: Fault) {
        requests += 1
        faults[fault.rawValue, default: 0] += 1
    }
}

extension [UInt8] {
    /// The index of the `\r\n\r\n` that ends a request head, if it arrived.
    var headEnd: Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4)
        where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index
        }
        return nil
    }
}
