import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// Routes for the coordinator's transfer tests: files that can be cut mid-body, resumed with
/// `Range`, guarded by a bearer token, or held half-sent.
///
/// - `/transfers/file?n=&key=&cutAt=&cuts=&validator=&ranges=&honorRange=`: `n` pattern bytes
///   (as `/bytes`). The first `cuts` (default 1) requests for `key` send the head and the bytes
///   up to offset `cutAt`, then close (no cut without `cutAt`). `validator`: `etag` (default,
///   strong), `weak`, `modified` or `none`; `ranges=0` leaves out `Accept-Ranges: bytes`;
///   `honorRange=0` answers 200 with the whole body even to a `Range`. A `Range: bytes=N-` whose
///   `If-Range` matches (or is absent) gets a 206 from `N`.
/// - `/transfers/auth?valid=&n=`: `n` pattern bytes when `Authorization: Bearer <valid>`, else 401.
/// - `/transfers/held?name=&n=`: the head and the first half of `n` pattern bytes, then the rest
///   once `openGate(name)` was called (it counts as held at that gate, see `waitUntilHeld`).
extension TestServer {
    public static let transferETag = #""file-v1""#
    public static let transferLastModified = "Tue, 03 Nov 2026 10:00:00 GMT"

    func transfersRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        switch request.path {
        case "/transfers/file":
            transferFile(request, out)
        case "/transfers/auth":
            let valid = request.query("valid") ?? "good"
            if request.head.headers.first(name: "Authorization") == "Bearer \(valid)" {
                let body = Self.pattern(0..<request.intQuery("n", default: 1024))
                out.send(200, headers: [("Content-Type", "application/octet-stream")], body: body)
            } else {
                out.send(401, "Unauthorized", headers: [("WWW-Authenticate", "Bearer")], body: Array("denied".utf8))
            }
        case "/transfers/held":
            let name = request.query("name") ?? "default"
            let count = request.intQuery("n", default: 1 << 20)
            out.raw(Array("HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\n\r\n".utf8) + Self.pattern(0..<count / 2))
            hold(at: name, out) { responder, _ in responder.raw(Self.pattern(count / 2..<count)) }
        default:
            return false
        }
        return true
    }

    private func transferFile(_ request: IncomingRequest, _ out: Responder) {
        let count = request.intQuery("n", default: 1 << 20)
        let key = "transfer-" + (request.query("key") ?? "default")
        let attempt = flakyCounts.withLock { counts in
            counts[key, default: 0] += 1
            return counts[key]!
        }
        var headers = [("Content-Type", "application/octet-stream")]
        if request.query("ranges") != "0" { headers.append(("Accept-Ranges", "bytes")) }
        let validator: String?
        switch request.query("validator") ?? "etag" {
        case "etag":
            validator = Self.transferETag
            headers.append(("ETag", Self.transferETag))
        case "weak":
            validator = nil
            headers.append(("ETag", "W/" + Self.transferETag))
        case "modified":
            validator = Self.transferLastModified
            headers.append(("Last-Modified", Self.transferLastModified))
        default:
            validator = nil
        }
        var start = 0
        var status = "200 OK"
        if request.query("honorRange") != "0", let range = request.head.headers.first(name: "Range"),
            range.hasPrefix("bytes="), range.hasSuffix("-"), let from = Int(range.dropFirst(6).dropLast()),
            from < count,
            request.head.headers.first(name: "If-Range").map({ $0 == validator }) ?? true
        {
            start = from
            status = "206 Partial Content"
            headers.append(("Content-Range", "bytes \(from)-\(count - 1)/\(count)"))
        }
        var head = "HTTP/1.1 \(status)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(count - start)\r\n\r\n"
        if let cutAt = request.query("cutAt").flatMap(Int.init), attempt <= request.intQuery("cuts", default: 1) {
            out.raw(Array(head.utf8) + Self.pattern(start..<max(start, min(cutAt, count))), thenClose: true)
        } else {
            out.raw(Array(head.utf8) + Self.pattern(start..<count))
        }
    }

    /// The pattern bytes (as `/bytes` serves them) at `range`.
    static func pattern(_ range: Range<Int>) -> [UInt8] { Payloads.pattern(range) }
}
