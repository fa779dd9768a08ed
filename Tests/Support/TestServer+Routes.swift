import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// The routes. Each is small on purpose: one behaviour per path.
///
/// Well-behaved: `/json`, `/peer`, `/bytes?n=`, `/text?n=`, `/gzip?n=`, `/deflate?n=`,
/// `/deflate-raw?n=`, `/status/N`, `/redirect/N`, `/redirect-to?to=&status=`,
/// `/redirect-loop`, `/echo`, `/stream?count=&size=&delayMs=`, `/slow-body?chunks=&delayMs=`,
/// `/duplicate-same-length`.
/// Faults: `/gzip-corrupt`, `/gzip-truncated`, `/gzip-trailing-garbage`, `/gzip-bomb?mb=`,
/// `/unknown-encoding`, `/stall`, `/close-mid-body`, `/close-immediately`, `/close-first?key=`,
/// `/close-mid-headers`, `/conflicting-length`, `/two-locations`, `/bare-cr`,
/// `/nul-header`, `/huge-headers?kb=`, `/obs-fold`.
extension TestServer {
    func route(_ request: IncomingRequest, _ out: Responder) {
        if servicesRoute(request, out) { return }
        if openAPIRoute(request, out) { return }
        if cookiesRoute(request, out) { return }
        if cachingRoute(request, out) { return }
        if parityRoute(request, out) { return }
        if faultRoute(request, out) { return }
        if transfersRoute(request, out) { return }
        if eventStreamRoute(request, out) { return }
        if trailersRoute(request, out) { return }
        let json = [("Content-Type", "application/json")]
        switch request.path {
        case "/json":
            out.send(200, headers: json, body: Payloads.smallJSON)
        case "/peer":
            // Both ends of the connection: `<server ip>:<port> <client ip>:<port>`.
            let channel = out.context.channel
            func text(_ address: SocketAddress?) -> String { "\(address?.ipAddress ?? "?"):\(address?.port ?? 0)" }
            out.send(200, body: Array("\(text(channel.localAddress)) \(text(channel.remoteAddress))".utf8))
        case "/bytes":
            sendPattern(count: request.intQuery("n", default: 1024), out)
        case "/text":
            out.send(200, headers: json, body: Payloads.text(count: request.intQuery("n", default: 1024)))
        case "/gzip", "/deflate", "/deflate-raw":
            let format: Compression.Format =
                request.path == "/gzip" ? .gzip : request.path == "/deflate" ? .zlib : .raw
            let name = request.path == "/gzip" ? "gzip" : "deflate"
            let body = compressed(count: request.intQuery("n", default: 1024), format: format)
            out.send(200, headers: json + [("Content-Encoding", name)], body: body)
        case "/gzip-corrupt":
            var body = compressed(count: 4096, format: .gzip)
            for i in 20..<40 { body[i] ^= 0x5A }
            out.send(200, headers: [("Content-Encoding", "gzip")], body: body)
        case "/gzip-truncated":
            let body = compressed(count: 8192, format: .gzip)
            out.send(200, headers: [("Content-Encoding", "gzip")], body: Array(body.dropLast(24)))
        case "/gzip-trailing-garbage":
            let body = compressed(count: 1024, format: .gzip) + Array("garbage".utf8)
            out.send(200, headers: [("Content-Encoding", "gzip")], body: body)
        case "/gzip-bomb":
            let megabytes = request.intQuery("mb", default: 16)
            let body = cachedPayload("bomb-\(megabytes)") {
                Compression.compress([UInt8](repeating: 0, count: megabytes << 20), format: .gzip, level: 9)
            }
            out.send(200, headers: [("Content-Encoding", "gzip")], body: body)
        case "/unknown-encoding":
            out.send(200, headers: [("Content-Encoding", "compress")], body: Array("not really compressed".utf8))
        case "/status":
            out.send(404, "Not Found")
        case let path where path.hasPrefix("/status/"):
            let code = Int(path.dropFirst("/status/".count)) ?? 500
            out.send(code, "Status", headers: [("Content-Type", "text/plain")], body: Array("status \(code)".utf8))
        case let path where path.hasPrefix("/redirect/"):
            let remaining = Int(path.dropFirst("/redirect/".count)) ?? 0
            if remaining > 0 {
                out.send(302, "Found", headers: [("Location", "/redirect/\(remaining - 1)")])
            } else {
                out.send(200, headers: json, body: Payloads.smallJSON)
            }
        case "/redirect-loop":
            out.send(302, "Found", headers: [("Location", "/redirect-loop")])
        case "/redirect-to":
            let status = request.intQuery("status", default: 302)
            out.send(status, "Redirect", headers: [("Location", request.query("to") ?? "/json")])
        case "/echo":
            echo(request, out)
        case "/stream":
            stream(
                count: request.intQuery("count", default: 10), size: request.intQuery("size", default: 100),
                delay: request.intQuery("delayMs", default: 0), out)
        case "/slow-body":
            let chunks = request.intQuery("chunks", default: 5)
            out.raw("HTTP/1.1 200 OK\r\nContent-Length: \(chunks * 100)\r\n\r\n")
            dribble(remaining: chunks, delay: request.intQuery("delayMs", default: 50), out)
        case "/stall":
            out.raw("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
        case "/close-mid-body":
            out.raw(
                "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 100), thenClose: true)
        case "/close-immediately":
            out.close()
        case "/close-first":
            // Closes without an answer the first time it sees `key`, answers after: a client that
            // sent it over a reused connection retries on a new one and succeeds.
            let seen = flakyCounts.withLock { counts in
                defer { counts["close-first " + (request.query("key") ?? ""), default: 0] += 1 }
                return counts["close-first " + (request.query("key") ?? ""), default: 0]
            }
            if seen == 0 { out.close() } else { out.send(200, body: Array("ok".utf8)) }
        case "/close-mid-headers":
            out.raw("HTTP/1.1 200 OK\r\nContent-Le", thenClose: true)
        case "/conflicting-length":
            out.raw("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
        case "/duplicate-same-length":
            out.raw("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
        case "/two-locations":
            out.raw("HTTP/1.1 302 Found\r\nLocation: /json\r\nLocation: /bytes\r\nContent-Length: 0\r\n\r\n")
        case "/bare-cr":
            out.raw("HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 2\r\n\r\nok")
        case "/nul-header":
            out.raw(Array("HTTP/1.1 200 OK\r\nX-Bad: a".utf8) + [0] + Array("b\r\nContent-Length: 2\r\n\r\nok".utf8))
        case "/obs-fold":
            out.raw("HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nok")
        case "/huge-headers":
            let kilobytes = request.intQuery("kb", default: 100)
            let filler = String(repeating: "h", count: 1000)
            let headers = (0..<kilobytes).map { ("X-Filler-\($0)", filler) }
            out.send(200, headers: headers, body: Array("ok".utf8))
        default:
            out.send(404, "Not Found", body: Array("no route".utf8))
        }
    }

    private func echo(_ request: IncomingRequest, _ out: Responder) {
        let echo = Echo(
            method: request.head.method.rawValue, uri: request.head.uri,
            headers: request.head.headers.map { [$0.name, $0.value] },
            bodyLength: request.bodyLength, bodyCRC: request.bodyCRC,
            body: request.bodyLength <= 65_536 ? String(decoding: request.bodyPrefix, as: UTF8.self) : nil)
        let body = (try? JSONEncoder().encode(echo)).map { Array($0) } ?? []
        out.send(200, headers: [("Content-Type", "application/json")], body: body)
    }

    /// Streams the binary pattern in 256 KiB writes, each after the previous one left.
    private func sendPattern(count: Int, _ out: Responder) {
        out.raw("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(count)\r\n\r\n")
        func writeChunk(from offset: Int) {
            guard offset < count, !out.isHead else { return }
            let size = min(256 << 10, count - offset)
            var buffer = out.allocator.buffer(capacity: size)
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { pointer in
                Payloads.fillPattern(UnsafeMutableRawBufferPointer(rebasing: pointer[..<size]), offset: offset)
                return size
            }
            out.write(buffer) { writeChunk(from: offset + size) }
        }
        writeChunk(from: 0)
    }

    private func stream(count: Int, size: Int, delay: Int, _ out: Responder) {
        out.raw("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        func next(_ index: Int) {
            guard index < count else {
                out.raw("0\r\n\r\n")
                return
            }
            var bytes = Array(String(size, radix: 16).utf8) + [13, 10]
            bytes += Payloads.pattern(index * size..<(index + 1) * size)
            bytes += [13, 10]
            var buffer = out.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            out.write(buffer) {
                if delay > 0 { out.after(milliseconds: delay) { next(index + 1) } } else { next(index + 1) }
            }
        }
        next(0)
    }

    private func dribble(remaining: Int, delay: Int, _ out: Responder) {
        guard remaining > 0 else { return }
        out.after(milliseconds: delay) {
            out.raw(String(repeating: "s", count: 100))
            self.dribble(remaining: remaining - 1, delay: delay, out)
        }
    }

    private func compressed(count: Int, format: Compression.Format) -> [UInt8] {
        cachedPayload("\(format)-\(count)") { Compression.compress(Payloads.text(count: count), format: format) }
    }

    /// `make()`'s bytes, made once per server and key.
    func cachedPayload(_ key: String, make: () -> [UInt8]) -> [UInt8] {
        if let cached = payloadCache.withLock({ $0[key] }) { return cached }
        let made = make()
        payloadCache.withLock { $0[key] = made }
        return made
    }
}
