import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// The event stream route, for `EventStreamTests`.
///
/// `/events?key=&count=&retry=&then=&connections=&type=&status=&huge=`: a `text/event-stream`
/// response (chunked), counted per `key`. Each connection sends `retry: <retry>` first when
/// given, then `count` (default 3) events `id: <n>`, `event: tick`, `data: {"n":<n>}`, numbered
/// on from the request's `Last-Event-ID` (or from 1). Then, by `then`: `close` (default) ends
/// the response, `cut` closes the connection mid-body, `hold` keeps it open until
/// `openGate(key)`. Connections after the first `connections` get a 204. `type` replaces the
/// content type; `status=N:S` answers the first N connections with status S and no events;
/// `partial=1` adds a block the response never ends (`id: 99`, `data: partial`); `huge=N` adds
/// a data line of N bytes with no end; `token=T` answers 401 (not counted) unless the request
/// carries `Authorization: Bearer T`.
extension TestServer {
    func eventStreamRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        guard request.path == "/events" else { return false }
        if let token = request.query("token"), request.head.headers.first(name: "Authorization") != "Bearer \(token)" {
            out.send(401, "Unauthorized", headers: [("WWW-Authenticate", "Bearer")], body: Array("denied".utf8))
            return true
        }
        let key = "events-" + (request.query("key") ?? "default")
        let connection = flakyCounts.withLock { counts in
            counts[key, default: 0] += 1
            return counts[key]!
        }
        if let limit = request.query("connections").flatMap(Int.init), connection > limit {
            out.send(204, "No Content")
            return true
        }
        if let failing = request.query("status")?.split(separator: ":"), failing.count == 2,
            let first = Int(failing[0]), let status = Int(failing[1]), connection <= first
        {
            out.send(status, "Failing", headers: [("Content-Type", "text/plain")], body: Array("no".utf8))
            return true
        }
        var text = ""
        if let retry = request.query("retry") { text += "retry: \(retry)\n\n" }
        let after = request.head.headers.first(name: "Last-Event-ID").flatMap(Int.init) ?? 0
        for n in stride(from: after + 1, through: after + request.intQuery("count", default: 3), by: 1) {
            text += ": comment\nid: \(n)\nevent: tick\ndata: {\"n\":\(n)}\n\n"
        }
        if request.query("partial") == "1" { text += "id: 99\ndata: partial\n" }
        if let huge = request.query("huge").flatMap(Int.init) { text += "data: " + String(repeating: "x", count: huge) }
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: \(request.query("type") ?? "text/event-stream")\r\n"
            + "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n"
        switch request.query("then") ?? "close" {
        case "cut":
            out.raw(head + chunk, thenClose: true)
        case "hold":
            out.raw(head + chunk)
            hold(at: request.query("key") ?? "default", out) { responder, _ in responder.raw("0\r\n\r\n") }
        default:
            out.raw(head + chunk + "0\r\n\r\n")
        }
        return true
    }
}
