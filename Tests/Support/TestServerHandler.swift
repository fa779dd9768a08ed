import CourierCore
import NIOCore
import NIOHTTP1

/// Parses requests with NIOHTTP1's decoder and writes responses as raw bytes, so that
/// fault routes can send what no well-behaved server would.
final class TestServerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    let server: TestServer
    private var head: HTTPRequestHead?
    private var bodyLength = 0
    private var bodyCRC: UInt32 = 0
    private var bodyPrefix: [UInt8] = []
    /// Whether the request in progress is a `/duplex` one, answered as it arrives.
    private var duplex = false

    init(server: TestServer) { self.server = server }

    func channelActive(context: ChannelHandlerContext) {
        server.stats.withLock {
            $0.connectionsAccepted += 1
            $0.connectionsOpen += 1
            $0.peakConnectionsOpen = max($0.peakConnectionsOpen, $0.connectionsOpen)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.stats.withLock { $0.connectionsOpen -= 1 }
        server.connectionClosed()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            bodyLength = 0
            bodyCRC = 0
            bodyPrefix = []
            duplex = head.uri == "/duplex" || head.uri.hasPrefix("/duplex?")
            if duplex { DuplexEcho.begin(context) }
        case .body(let buffer):
            if duplex { DuplexEcho.echo(buffer, context) }
            bodyLength += buffer.readableBytes
            buffer.withUnsafeReadableBytes { bytes in
                bodyCRC = Compression.crc32(bytes, continuing: bodyCRC)
                if bodyPrefix.count < 1 << 20 {
                    bodyPrefix.append(contentsOf: bytes.prefix((1 << 20) - bodyPrefix.count))
                }
            }
        case .end(let trailers):
            guard let head else { return }
            self.head = nil
            if duplex {
                duplex = false
                server.record(
                    .init(
                        method: head.method.rawValue, uri: head.uri,
                        headers: head.headers.map { (name: $0.name, value: $0.value) }, bodyLength: bodyLength))
                DuplexEcho.end(bodyLength: bodyLength, bodyCRC: bodyCRC, trailers: trailers, context)
                return
            }
            let request = IncomingRequest(
                head: head, bodyLength: bodyLength, bodyCRC: bodyCRC, bodyPrefix: bodyPrefix)
            server.record(
                .init(
                    method: head.method.rawValue, uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) }, bodyLength: bodyLength))
            let responder = Responder(context: context, closeAfter: !head.isKeepAlive, isHead: head.method == .HEAD)
            server.route(request, responder)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A request with its body summarised.
struct IncomingRequest {
    var head: HTTPRequestHead
    var bodyLength: Int
    var bodyCRC: UInt32
    var bodyPrefix: [UInt8]

    var path: Substring { head.uri.split(separator: "?", maxSplits: 1).first ?? "/" }

    func query(_ name: String) -> String? {
        guard let start = head.uri.firstIndex(of: "?") else { return nil }
        for pair in head.uri[head.uri.index(after: start)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.first.map(String.init) == name { return parts.count > 1 ? percentDecoded(parts[1]) : "" }
        }
        return nil
    }

    /// Every query item, decoded, in order (names may repeat).
    var queryItems: [(name: String, value: String)] {
        guard let start = head.uri.firstIndex(of: "?") else { return [] }
        return head.uri[head.uri.index(after: start)...].split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return (percentDecoded(parts.first ?? ""), parts.count > 1 ? percentDecoded(parts[1]) : "")
        }
    }

    func intQuery(_ name: String, default value: Int) -> Int { query(name).flatMap { Int($0) } ?? value }

    private func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Writes raw response bytes on the connection's event loop.
struct Responder {
    let context: ChannelHandlerContext
    let closeAfter: Bool
    /// Answers a HEAD: `send` writes the head a GET would get, without its body.
    var isHead = false

    var eventLoop: NIOIsolatedEventLoop { context.eventLoop.assumeIsolated() }

    /// A complete, well-formed response (without its body for a HEAD).
    func send(
        _ status: Int, _ reason: String = "OK", headers: [(String, String)] = [], body: [UInt8] = [],
        contentLength: Int? = nil
    ) {
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(contentLength ?? body.count)\r\n"
        if closeAfter { text += "Connection: close\r\n" }
        text += "\r\n"
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count + body.count)
        buffer.writeString(text)
        if !isHead { buffer.writeBytes(body) }
        write(buffer, thenClose: closeAfter)
    }

    /// Bytes exactly as given.
    func raw(_ bytes: [UInt8], thenClose: Bool = false) {
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        write(buffer, thenClose: thenClose)
    }

    func raw(_ text: String, thenClose: Bool = false) { raw(Array(text.utf8), thenClose: thenClose) }

    func write(_ buffer: ByteBuffer, thenClose: Bool) {
        let future = context.writeAndFlush(NIOAny(buffer))
        if thenClose {
            let context = self.context
            future.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    /// Writes `buffer`, calling `next` once the bytes left (backpressure for large bodies).
    func write(_ buffer: ByteBuffer, then next: @escaping () -> Void) {
        context.writeAndFlush(NIOAny(buffer)).assumeIsolated().whenComplete { result in
            if case .success = result { next() }
        }
    }

    func close() { context.close(promise: nil) }

    func after(milliseconds: Int, _ body: @escaping () -> Void) {
        eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) { body() }
    }

    var allocator: ByteBufferAllocator { context.channel.allocator }
}
