import CourierCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on 127.0.0.1 and a free port, with an accept loop on a thread of its
/// own that hands each connection to a handler thread: what the plain-socket test servers
/// (`ConnectProxy`, `PacedServer`) share.
///
/// `@unchecked Sendable`: `descriptor` and `port` are set once in `init`; `stopped` is behind a lock.
final class LoopbackListener: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32
    private let stopped = LockedValue(false)

    struct SocketError: Error { var code: Int32 }

    /// Listens, with a receive buffer of `receiveBuffer` bytes for accepted sockets when given,
    /// and serves each connection on a thread of its own with `serve` (which closes it).
    init(receiveBuffer: Int32? = nil, serve: @escaping @Sendable (Int32) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(code: errno) }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw SocketError(code: code)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let stopped = self.stopped
        Thread.detachNewThread {
            defer { close(fd) }
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if stopped.withLock({ $0 }) { return }
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                Thread.detachNewThread { serve(client) }
            }
        }
    }

    /// Stops accepting (the accept loop closes the listener); connections open now go on.
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }
}
