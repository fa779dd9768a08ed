import Foundation
import NIOCore
import NIOHTTP1

/// Routes for faults that name the party at fault: stalls at each stage, broken framing, giant
/// header lines, stacked content codings and redirects to other schemes.
///
/// Stalls: `/stall-before-head` (nothing at all), `/stall-after-head` (a head promising a body,
/// then nothing); `/stall` (in `route`) stalls mid-body. Framing: `/garbage-status`, `/http09`,
/// `/giant-header-line?kb=`, `/many-headers?n=`, `/bad-chunk-size`, `/overflowing-chunk-size`,
/// `/unknown-transfer-coding[?chunked=1|after=1|twice=1]`. Codings:
/// `/stacked?codings=gzip,br,zstd&n=` (applied in the order listed, as `Content-Encoding` lists
/// them), `/coded-fault?coding=&fault=`. Redirects: `/redirect-file`. Sizes: `/announce?length=&status=` answers a head with
/// `Content-Length: length` (and, but for HEAD, 1xx, 204 and 304, 16 bytes of it, then closes).
extension TestServer {
    func faultRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        switch request.path {
        case "/stall-before-head":
            break
        case "/stall-after-head":
            out.raw("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        case "/garbage-status":
            out.raw("HTTP/1.1 2x0 WHAT\r\nContent-Length: 2\r\n\r\nok")
        case "/http09":
            out.raw("hello from the nineties\n", thenClose: true)
        case "/giant-header-line":
            let value = String(repeating: "g", count: request.intQuery("kb", default: 200) << 10)
            out.raw("HTTP/1.1 200 OK\r\nX-Giant: \(value)\r\nContent-Length: 2\r\n\r\nok")
        case "/unknown-transfer-coding":
            // A coding no client knows, the body delimited by the close; then one before chunked,
            // and one after it (which leaves the length unknown: malformed); chunked twice.
            if request.query("twice") == "1" {
                out.raw(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                )
            } else if request.query("after") == "1" {
                out.raw(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x-custom\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                )
            } else if request.query("chunked") == "1" {
                out.raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: x-custom, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            } else {
                out.raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: x-custom\r\n\r\nhello", thenClose: true)
            }
        case "/bad-chunk-size":
            out.raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n")
        case "/overflowing-chunk-size":
            out.raw(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
                    + "FFFFFFFFFFFFFFFFFFFFFF\r\nworld\r\n0\r\n\r\n")
        case "/stacked":
            let codings = (request.query("codings") ?? "gzip").split(separator: ",").map(String.init)
            var body = Payloads.text(count: request.intQuery("n", default: 4096))
            for coding in codings {
                switch coding {
                case "gzip", "x-gzip": body = Compression.compress(body, format: .gzip)
                case "deflate": body = Compression.compress(body, format: .zlib)
                case "br": body = Compression.compress(body, format: .brotli)
                case "zstd": body = Compression.compress(body, format: .zstd)
                default: break
                }
            }
            out.send(200, headers: [("Content-Encoding", codings.joined(separator: ", "))], body: body)
        case "/coded-fault":
            // `coding` (gzip, br, zstd) gone wrong as `fault` says: corrupt, truncated, trailing
            // (garbage after the stream), bomb (`mb` MiB of zeros), wide-window (zstd only: a
            // frame that needs a 16 MiB window).
            let coding = request.query("coding") ?? "gzip"
            let fault = request.query("fault") ?? "corrupt"
            let megabytes = request.intQuery("mb", default: 16)
            let body = cachedPayload("coded-fault-\(coding)-\(fault)-\(megabytes)") {
                let format: Compression.Format = coding == "br" ? .brotli : coding == "zstd" ? .zstd : .gzip
                let text = Payloads.text(count: 64 << 10)
                switch fault {
                case "truncated": return Array(Compression.compress(text, format: format).dropLast(24))
                case "trailing": return Compression.compress(text, format: format) + Array("garbage".utf8)
                case "bomb": return Compression.compress([UInt8](repeating: 0, count: megabytes << 20), format: format)
                case "wide-window": return Compression.zstd(Payloads.text(count: 12 << 20), windowLog: 24)
                default:
                    var body = Compression.compress(text, format: format)
                    for index in 8..<min(body.count, 40) { body[index] ^= 0x5A }
                    return body
                }
            }
            out.send(200, headers: [("Content-Encoding", coding)], body: body)
        case "/many-headers":
            let lines = (0..<request.intQuery("n", default: 70_000)).map { "a\($0 % 10): b\r\n" }.joined()
            out.raw("HTTP/1.1 200 OK\r\n\(lines)Content-Length: 2\r\n\r\nok")
        case "/announce":
            let status = request.intQuery("status", default: 200)
            let length = request.intQuery("length", default: 100 << 20)
            let head = "HTTP/1.1 \(status) Whatever\r\nContent-Length: \(length)\r\nETag: \"big\"\r\n\r\n"
            let bodiless = request.head.method == .HEAD || status < 200 || status == 204 || status == 304
            out.raw(bodiless ? head : head + String(repeating: "b", count: 16), thenClose: !bodiless)
        case "/redirect-file":
            out.send(302, "Found", headers: [("Location", "file:///etc/passwd")])
        default:
            return false
        }
        return true
    }
}
