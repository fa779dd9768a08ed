import CourierCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// A loopback HTTP/1.1 server for tests, built on SwiftNIO, with fault-injecting routes
/// (see `TestServer+Routes.swift`). Start one per test on an ephemeral port; stop it after.
public final class TestServer: Sendable {
    /// What the server saw, for assertions.
    public struct Stats: Sendable {
        public var connectionsAccepted = 0
        public var connectionsOpen = 0
        /// The most connections open at once.
        public var peakConnectionsOpen = 0
        public var requests: [RecordedRequest] = []
        public var requestCount = 0
    }

    /// One request as received.
    public struct RecordedRequest: Sendable {
        public var method: String
        public var uri: String
        public var headers: [(name: String, value: String)]
        public var bodyLength: Int

        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    let stats = LockedValue(Stats())
    let payloadCache = LockedValue<[String: [UInt8]]>([:])
    let gates = LockedValue<[String: Gate]>([:])
    let flakyCounts = LockedValue<[String: Int]>([:])
    /// Every body `PUT /openapi/uploads/<name>` received, by name.
    let uploads = LockedValue<[String: [UploadAttempt]]>([:])
    let cacheRoutes = LockedValue<[String: CacheRouteState]>([:])
    /// Connections the server saw close, for `waitForClosedConnections(_:timeout:)`.
    let closedConnections = CountWaiters()
    let group: MultiThreadedEventLoopGroup
    private let channel: LockedValue<(any Channel)?>
    /// The TCP port, or 0 for a Unix-socket server.
    public let port: Int
    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// `127.0.0.1:<port>`, for `HTTPRequest.authority`.
    public var authority: String { "127.0.0.1:\(port)" }

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, port: Int) {
        self.group = group
        self.channel = LockedValue(channel)
        self.port = port
    }

    /// The generic handler's metadata, instantiated once before any server thread needs it.
    /// Under ThreadSanitizer the Swift runtime crashed (1 run in 40) when many servers'
    /// threads instantiated `ByteToMessageHandler<HTTPRequestDecoder>` at the same moment.
    private static let handlerMetadata: Void = {
        _ = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
    }()

    /// Starts a server on 127.0.0.1 (or `host`) and an ephemeral port (or `port`), or on a
    /// Unix-domain socket.
    public static func start(
        unixSocketPath: String? = nil, threads: Int = 1, host: String = "127.0.0.1", port: Int = 0
    ) async throws -> TestServer {
        _ = handlerMetadata
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let box = ServerBox()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)))
                    try channel.pipeline.syncOperations.addHandler(TestServerHandler(server: box.server!))
                }
            }
        let channel: any Channel
        if let unixSocketPath {
            channel = try await bootstrap.bind(unixDomainSocketPath: unixSocketPath, cleanupExistingSocketFile: true)
                .get()
        } else {
            channel = try await bootstrap.bind(host: host, port: port).get()
        }
        let server = TestServer(group: group, channel: channel, port: channel.localAddress?.port ?? 0)
        box.server = server
        return server
    }

    /// Stops accepting, closes every connection and the event loops.
    public func stop() async {
        let channel = self.channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await channel?.close().get()
        try? await group.shutdownGracefully()
    }

    /// A snapshot of what the server saw.
    public var snapshot: Stats { stats.withLock { $0 } }

    /// Requests received for paths starting with `prefix`.
    public func requests(to prefix: String) -> [RecordedRequest] {
        stats.withLock { $0.requests.filter { $0.uri.hasPrefix(prefix) } }
    }

    func record(_ request: RecordedRequest) {
        stats.withLock { stats in
            stats.requestCount += 1
            if stats.requests.count < 5_000 { stats.requests.append(request) }
        }
    }
}

/// Lets the child initializer reach the server created after `bind` returns.
private final class ServerBox: Sendable {
    private let storage = LockedValue<TestServer?>(nil)
    var server: TestServer? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
