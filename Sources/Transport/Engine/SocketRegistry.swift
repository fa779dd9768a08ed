internal import CCurl

#if canImport(Glibc)
internal import Glibc
#endif

/// The sockets a loop's curl has open, so that an idle check can find a transfer's socket and
/// read how much of its request body still waits there (``IdleWatch``). curl tells a transfer's
/// socket (`CURLINFO_ACTIVESOCKET`) only once the transfer is done; it tells its local and
/// remote ports during it, and together they name the socket.
///
/// It also knows the origin each connection serves, for ``ConnectionPoolSnapshot``: a socket
/// is attributed when a transfer that opened it ends, or when a
/// snapshot finds a running transfer on it.
///
/// The loop's easy handles open and close their sockets through ``socketOpenCallback`` and
/// ``socketCloseCallback``, which record them here. Loop thread only, like the rest of the loop.
struct SocketRegistry {
    /// A connected socket's local and remote ports: Linux gives connections to different
    /// remote ports the same local port, so the local port alone does not name a socket.
    struct Ports: Equatable {
        var local: Int
        var remote: Int
    }

    /// Open sockets and their ports (`nil` until looked up: a socket has none before it
    /// connects).
    private var ports: [Int32: Ports] = [:]
    private var unresolved: Set<Int32> = []
    /// The origin each attributed socket serves.
    private var origins: [Int32: String] = [:]

    var count: Int { ports.count + unresolved.count }

    mutating func opened(_ socket: Int32) { unresolved.insert(socket) }

    mutating func closed(_ socket: Int32) {
        if unresolved.remove(socket) == nil { ports[socket] = nil }
        origins[socket] = nil
    }

    /// Records that `socket`, when it is open, serves `origin`.
    mutating func attribute(_ socket: Int32, to origin: String) {
        guard ports[socket] != nil || unresolved.contains(socket) else { return }
        origins[socket] = origin
    }

    /// The open sockets by origin, those in `inUse` counted as in use; sockets not yet
    /// attributed are counted as `connecting`.
    func census(inUse: Set<Int32>) -> (byOrigin: [String: ConnectionPoolSnapshot.Connections], connecting: Int) {
        var byOrigin: [String: ConnectionPoolSnapshot.Connections] = [:]
        var connecting = 0
        for socket in Array(ports.keys) + Array(unresolved) {
            guard let origin = origins[socket] else {
                connecting += 1
                continue
            }
            byOrigin[origin, default: .init(open: 0, inUse: 0)].open += 1
            if inUse.contains(socket) { byOrigin[origin, default: .init(open: 0, inUse: 0)].inUse += 1 }
        }
        return (byOrigin, connecting)
    }

    /// The open socket connected from `localPort` to `remotePort`, if any.
    mutating func socket(localPort: Int, remotePort: Int) -> Int32? {
        guard localPort > 0, remotePort > 0 else { return nil }
        let wanted = Ports(local: localPort, remote: remotePort)
        if let found = ports.first(where: { $0.value == wanted }) { return found.key }
        for socket in unresolved {
            let found = Ports(local: courier_socket_local_port(socket), remote: courier_socket_peer_port(socket))
            // Not connected yet: looked up again next time.
            guard found.local > 0, found.remote > 0 else { continue }
            unresolved.remove(socket)
            ports[socket] = found
            if found == wanted { return socket }
        }
        return nil
    }
}

/// curl's socket-opening callback: opens the socket it asks for and records it with the loop
/// (`clientp`, unretained: the loop outlives its handles and its multi's connections).
let socketOpenCallback: courier_opensocket_callback = { clientp, _, address in
    guard let clientp, let address else { return -1 }
    let socket = Glibc.socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    if socket >= 0 {
        Unmanaged<CurlEventLoop>.fromOpaque(clientp).takeUnretainedValue().sockets.value.opened(socket)
    }
    return socket
}

/// curl's socket-closing callback: forgets the socket and closes it.
let socketCloseCallback: courier_closesocket_callback = { clientp, socket in
    if let clientp {
        Unmanaged<CurlEventLoop>.fromOpaque(clientp).takeUnretainedValue().sockets.value.closed(socket)
    }
    return Glibc.close(socket)
}
