internal import CCurl
internal import CourierCore

/// What the loop's connection pool holds (``ConnectionPoolSnapshot``). Loop thread only.
///
/// curl does not list its connection cache, so the loop counts what it sees: every socket curl
/// opens and closes goes through the ``SocketRegistry``; a socket is attributed to an origin
/// when a transfer that opened a connection ends, or when a census finds a running transfer on
/// it, in both cases by its local and remote ports. A census runs right after `curl_multi_perform`: before
/// curl's first pass over a transfer, its recycled handle still reports the last transfer's
/// pre-transfer time, request size and local port. Nothing here runs for a transfer that
/// reuses a connection: the hot path pays only when a connection opens.
extension CurlEventLoop {
    /// Counts this loop's connections by origin, those running transfers use, and its transfers.
    func census() -> ConnectionPoolSnapshot.Loop {
        var inUse = Set<Int32>()
        for transfer in running.value.values {
            if let easy = transfer.easy, let socket = attributeRunningConnection(of: transfer, easy: easy) {
                inUse.insert(socket)
            }
        }
        let (byOrigin, connecting) = sockets.value.census(inUse: inUse)
        return ConnectionPoolSnapshot.Loop(
            index: index, connections: byOrigin, connecting: connecting, transfersRunning: running.value.count,
            transfersWaiting: admission.value.count)
    }

    /// Attributes the connection a running transfer uses to its origin, and returns its socket
    /// (nil before it connects, and over a Unix-domain socket, which has no port to find it by).
    @discardableResult
    func attributeRunningConnection(of transfer: Transfer, easy: UnsafeMutableRawPointer) -> Int32? {
        // Before it connects, a handle may still name its last transfer's port.
        guard Self.isConnected(easy, pretransfer: Self.pretransferTime(easy)) else { return nil }
        guard let socket = connectionSocket(easy) else { return nil }
        sockets.value.attribute(socket, to: transfer.request.originKey)
        return socket
    }

    /// The socket of the connection a connected transfer uses, by its local and remote ports.
    func connectionSocket(_ easy: UnsafeMutableRawPointer) -> Int32? {
        var localPort = 0
        var remotePort = 0
        _ = courier_easy_getinfo_long(easy, CURLINFO_LOCAL_PORT, &localPort)
        _ = courier_easy_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &remotePort)
        return sockets.value.socket(localPort: localPort, remotePort: remotePort)
    }

    /// Attributes the connection a finished transfer opened to its origin: found by its local
    /// port, or, over a Unix-domain socket, by the socket curl names once the connection went
    /// back to its pool (not while other streams still use it).
    func attributeConnection(of transfer: Transfer, easy: UnsafeMutableRawPointer) {
        if attributeRunningConnection(of: transfer, easy: easy) != nil { return }
        var socket: curl_socket_t = -1
        guard courier_easy_getinfo_socket(easy, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket >= 0 else { return }
        sockets.value.attribute(socket, to: transfer.request.originKey)
    }

    /// The transfer's pre-transfer time in microseconds (0 before it connected).
    static func pretransferTime(_ easy: UnsafeMutableRawPointer) -> curl_off_t {
        var pretransfer: curl_off_t = 0
        _ = courier_easy_getinfo_off(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        return pretransfer
    }

    /// Whether the transfer on `easy` has its connection. A reused connection may show a
    /// pre-transfer time of 0 µs; the request's bytes then show that it was sent.
    static func isConnected(_ easy: UnsafeMutableRawPointer, pretransfer: curl_off_t) -> Bool {
        if pretransfer > 0 { return true }
        var requestBytes = 0
        _ = courier_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestBytes)
        return requestBytes > 0
    }
}
