/// What a ``CurlTransport``'s connection pool holds at one moment: its connections by origin,
/// and its transfers, per loop (see ``CurlTransport/poolSnapshot()``).
///
/// Each loop has a pool of its own (curl's connection cache): a connection is counted by the
/// loop that opened it, under the origin of the transfer it was last seen carrying (through a
/// plain HTTP proxy, which carries several origins on one connection, that is the last one's).
/// A connection over a Unix-domain socket is found by curl's socket once its transfer ends,
/// not while it runs: it counts as connecting while its first transfer runs, and as idle after. Origins are `scheme://authority` as requested (`http://127.0.0.1:8080`,
/// `https://example.com`), after the socket's path and a space for requests over a
/// Unix-domain socket.
public struct ConnectionPoolSnapshot: Sendable, Equatable {
    /// An origin's open connections.
    public struct Connections: Sendable, Equatable {
        /// Connections open to the origin, in use or idle.
        public var open: Int
        /// Connections a running transfer is using (with HTTP/2, one connection carries many).
        public var inUse: Int
        /// Connections kept open for the next transfer.
        public var idle: Int { open - inUse }

        public init(open: Int, inUse: Int) {
            self.open = open
            self.inUse = inUse
        }
    }

    /// One loop's pool and transfers.
    public struct Loop: Sendable, Equatable {
        /// The loop's place in the transport (`0..<loops`).
        public var index: Int
        /// Open connections by origin.
        public var connections: [String: Connections]
        /// Sockets curl opened that no transfer has been seen on yet: connections being set up,
        /// and the rare one whose only transfer was cancelled while it kept the connection
        /// (HTTP/2), until another transfer on it is seen.
        public var connecting: Int
        /// Transfers curl is running.
        public var transfersRunning: Int
        /// Transfers waiting for a connection (the transport's admission queue, outside curl).
        public var transfersWaiting: Int

        init(
            index: Int, connections: [String: Connections] = [:], connecting: Int = 0, transfersRunning: Int = 0,
            transfersWaiting: Int = 0
        ) {
            self.index = index
            self.connections = connections
            self.connecting = connecting
            self.transfersRunning = transfersRunning
            self.transfersWaiting = transfersWaiting
        }
    }

    /// Every loop, in order.
    public var loops: [Loop]

    init(loops: [Loop]) { self.loops = loops }

    /// Open connections by origin, over every loop.
    public var connections: [String: Connections] {
        var merged: [String: Connections] = [:]
        for loop in loops {
            for (origin, counts) in loop.connections {
                merged[origin, default: Connections(open: 0, inUse: 0)].open += counts.open
                merged[origin, default: Connections(open: 0, inUse: 0)].inUse += counts.inUse
            }
        }
        return merged
    }

    /// Transfers waiting for a connection, over every loop.
    public var transfersWaiting: Int { loops.reduce(0) { $0 + $1.transfersWaiting } }

    /// Transfers curl is running, over every loop.
    public var transfersRunning: Int { loops.reduce(0) { $0 + $1.transfersRunning } }
}
