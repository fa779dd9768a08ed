import Foundation
import NIOHTTP1

/// Routes for the cookie jar tests (in the manner of httpbin's `/cookies`).
///
/// - `/cookies/set?name=value&...`: one `Set-Cookie: name=value; Path=/` per query item;
///   answers with the cookies the request carried, as `/cookies` does.
/// - `/cookies/raw?h=...&h=...`: each `h` item, verbatim, as a `Set-Cookie` field value.
/// - `/cookies` (and any other path under `/cookies/`): the request's cookies as JSON:
///   `{"cookies": {"name": "value"}, "lines": ["a=1; b=2"]}`, `lines` holding each `Cookie`
///   field as received.
extension TestServer {
    func cookiesRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        guard request.path == "/cookies" || request.path.hasPrefix("/cookies/") else { return false }
        var headers = [("Content-Type", "application/json")]
        switch request.path {
        case "/cookies/set":
            headers += request.queryItems.map { ("Set-Cookie", "\($0.name)=\($0.value); Path=/") }
        case "/cookies/raw":
            headers += request.queryItems.filter { $0.name == "h" }.map { ("Set-Cookie", $0.value) }
        default:
            break
        }
        out.send(200, headers: headers, body: Self.cookiesBody(request.head.headers))
        return true
    }

    private static func cookiesBody(_ headers: HTTPHeaders) -> [UInt8] {
        let lines = headers["Cookie"]
        var cookies: [String: String] = [:]
        for line in lines {
            for pair in line.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                cookies[name] = parts.count > 1 ? String(parts[1]) : ""
            }
        }
        let object: [String: Any] = ["cookies": cookies, "lines": lines]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}
