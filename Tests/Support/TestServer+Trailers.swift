import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// `/duplex`: answered while the request arrives. The head (200, chunked) goes out as soon as
/// the request's head is read, each body part comes back at once as a chunk of its own, and the
/// end carries trailers: `Body-Length` and `Body-CRC` of what was received, and each request
/// trailer back as `Echo-<name>`.
enum DuplexEcho {
    static func begin(_ context: ChannelHandlerContext) {
        write(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            context)
    }

    static func echo(_ part: ByteBuffer, _ context: ChannelHandlerContext) {
        guard part.readableBytes > 0 else { return }
        var buffer = context.channel.allocator.buffer(capacity: part.readableBytes + 16)
        buffer.writeString(String(part.readableBytes, radix: 16) + "\r\n")
        buffer.writeImmutableBuffer(part)
        buffer.writeString("\r\n")
        context.writeAndFlush(NIOAny(buffer), promise: nil)
    }

    static func end(bodyLength: Int, bodyCRC: UInt32, trailers: HTTPHeaders?, _ context: ChannelHandlerContext) {
        var text = "0\r\nBody-Length: \(bodyLength)\r\nBody-CRC: \(bodyCRC)\r\n"
        for (name, value) in trailers ?? [:] { text += "Echo-\(name): \(value)\r\n" }
        write(text + "\r\n", context)
    }

    private static func write(_ text: String, _ context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        context.writeAndFlush(NIOAny(buffer), promise: nil)
    }
}

/// `/trailers?kind=`: a chunked body (`hello, trailers`) and a trailer section by `kind`:
/// `fields` (default: `Checksum: 7f3a` and `Server-Timing: db;dur=5`), `none` (an empty one),
/// `gzip` (the body gzip-encoded, with the `fields` trailers), `gzipcut` (the same gzip stream
/// without its last 8 bytes), `nul` (a NUL in a trailer
/// line), `fold` (obsolete folding), `noname` (a line without a name), `huge` (200 trailers of
/// 1 KiB, over the 64 KiB limit), `longline` (one trailer line of 5 KiB, over curl's 4 KiB cap on a trailer line).
extension TestServer {
    func trailersRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        guard request.path == "/trailers" else { return false }
        var body = Array("hello, trailers".utf8)
        var head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Checksum, Server-Timing\r\n"
        let kind = request.query("kind") ?? "fields"
        if kind == "gzip" || kind == "gzipcut" {
            body = Compression.compress(body, format: .gzip)
            if kind == "gzipcut" { body.removeLast(8) }  // no CRC and size: the stream never ends
            head += "Content-Encoding: gzip\r\n"
        }
        var trailers: String
        switch kind {
        case "none": trailers = ""
        case "nul": trailers = "Checksum: 7f\u{0}3a\r\n"
        case "fold": trailers = "Checksum: 7f3a\r\n continued\r\n"
        case "noname": trailers = ": 7f3a\r\n"
        case "longline": trailers = "X-Long: \(String(repeating: "l", count: 5 * 1024))\r\n"
        case "huge": trailers = (0..<200).map { "X-Filler-\($0): \(String(repeating: "f", count: 1024))\r\n" }.joined()
        default: trailers = "Checksum: 7f3a\r\nServer-Timing: db;dur=5\r\n"
        }
        if out.closeAfter { head += "Connection: close\r\n" }
        var bytes = Array((head + "\r\n" + String(body.count, radix: 16) + "\r\n").utf8)
        bytes += body
        bytes += Array(("\r\n0\r\n" + trailers + "\r\n").utf8)
        out.raw(bytes, thenClose: out.closeAfter)
        return true
    }
}
