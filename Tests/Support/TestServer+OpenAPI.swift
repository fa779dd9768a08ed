import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// The catalog of `Tests/CourierOpenAPITests/openapi.yaml`, under `/openapi`. The item ID
/// picks a behaviour, since a generated client sends only what the document declares:
///
/// - `GET /openapi/items/{id}?locale=&tags=`: `{"id", "name", "locale", "tags", "served"}`;
///   `missing…` answers the declared 404 `{"message"}`; `flaky-<key>` answers 503 with
///   `Retry-After: 1` twice per key, then 200; `gated-<name>` is held at gate `<name>`
///   (``openGate(_:)``); `auth-<token>` needs `Authorization: Bearer <token>` (else 401);
///   `etag-<key>` sends `ETag: "<key>-v1"` and `Cache-Control: no-cache`, and 304 to a request
///   whose `If-None-Match` has it.
/// - `POST /openapi/items`: `{"name", "price"}` becomes 201 `{"id": "new", ...}`; an empty
///   name, 400 `{"message"}`.
/// - `GET /openapi/files/blob-<n>`: `n` bytes of ``Payloads/patternByte(at:)``, as
///   `application/octet-stream`; `flaky-<key>-<n>` answers 503 with `Retry-After: 1` twice per
///   key first; other names, 404.
/// - `PUT /openapi/uploads/<name>`: records the body's length and CRC-32 under `name`, then
///   answers 200 `{"attempts": [{"bodyLength", "bodyCRC"}, ...]}`, every body received for
///   `name` so far; `flaky-…` answers its first attempt 503 with `Retry-After: 1`;
///   `auth-<token>` answers 401 unless sent `Authorization: Bearer <token>`; `gated-<gate>` is
///   held at gate `<gate>`; `dropped-<gate>` is held there, then its connection closes without
///   an answer.
extension TestServer {
    func openAPIRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        guard request.path.hasPrefix("/openapi/") else { return false }
        let path = request.path.dropFirst("/openapi".count)
        let json = [("Content-Type", "application/json")]
        if path == "/items", request.head.method == .POST {
            createItem(request, out)
        } else if path.hasPrefix("/uploads/"), request.head.method == .PUT {
            upload(String(path.dropFirst("/uploads/".count)), request, out)
        } else if path.hasPrefix("/items/"), request.head.method == .GET {
            let id = String(path.dropFirst("/items/".count))
            getItem(id.removingPercentEncoding ?? id, request, out)
        } else if path.hasPrefix("/files/flaky-"), let count = path.split(separator: "-").last.flatMap({ Int($0) }) {
            let served = flakyCounts.withLock { counts in
                counts["openapi-\(path)", default: 0] += 1
                return counts["openapi-\(path)"]!
            }
            guard served > 2 else {
                out.send(503, "Unavailable", headers: [("Retry-After", "1")], body: Array("busy".utf8))
                return true
            }
            let bytes = Payloads.pattern(0..<count)
            out.send(200, headers: [("Content-Type", "application/octet-stream")], body: bytes)
        } else if path.hasPrefix("/files/blob-"), let count = Int(path.dropFirst("/files/blob-".count)) {
            let bytes = Payloads.pattern(0..<count)
            out.send(200, headers: [("Content-Type", "application/octet-stream")], body: bytes)
        } else {
            out.send(404, "Not Found", headers: json, body: Array(#"{"message":"no route"}"#.utf8))
        }
        return true
    }

    private func getItem(_ id: String, _ request: IncomingRequest, _ out: Responder) {
        let json = [("Content-Type", "application/json")]
        let served = flakyCounts.withLock { counts in
            counts["openapi-\(id)", default: 0] += 1
            return counts["openapi-\(id)"]!
        }
        var item: [String: Any] = ["id": id, "name": "Item \(id)", "served": served]
        if let locale = request.query("locale") { item["locale"] = locale }
        let tags = request.queryItems.filter { $0.name == "tags" }.map(\.value)
        if !tags.isEmpty { item["tags"] = tags }
        let body = { (item: [String: Any]) in
            Array((try? JSONSerialization.data(withJSONObject: item, options: [.sortedKeys])) ?? Data())
        }
        if id.hasPrefix("missing") {
            out.send(404, "Not Found", headers: json, body: Array(#"{"message":"no item \#(id)"}"#.utf8))
        } else if id.hasPrefix("flaky-"), served <= 2 {
            out.send(503, "Unavailable", headers: [("Retry-After", "1")], body: Array("busy".utf8))
        } else if id.hasPrefix("gated-") {
            let bytes = body(item)
            hold(at: String(id.dropFirst("gated-".count)), out) { responder, _ in
                responder.send(200, headers: json, body: bytes)
            }
        } else if id.hasPrefix("auth-"),
            request.head.headers.first(name: "Authorization") != "Bearer \(id.dropFirst("auth-".count))"
        {
            out.send(401, "Unauthorized", headers: [("WWW-Authenticate", "Bearer")], body: Array("denied".utf8))
        } else if id.hasPrefix("etag-") {
            let etag = "\"\(id.dropFirst("etag-".count))-v1\""
            let validators = [("ETag", etag), ("Cache-Control", "no-cache")]
            if request.head.headers.first(name: "If-None-Match")?.contains(etag) == true {
                out.send(304, "Not Modified", headers: validators)
            } else {
                out.send(200, headers: json + validators, body: body(item))
            }
        } else {
            out.send(200, headers: json, body: body(item))
        }
    }

    /// The bodies `PUT /openapi/uploads/<name>` received so far, oldest first.
    public func uploadAttempts(_ name: String) -> [UploadAttempt] {
        uploads.withLock { $0[name] ?? [] }
    }

    private func upload(_ name: String, _ request: IncomingRequest, _ out: Responder) {
        let attempts = uploads.withLock { uploads in
            uploads[name, default: []].append(UploadAttempt(bodyLength: request.bodyLength, bodyCRC: request.bodyCRC))
            return uploads[name]!
        }
        let json = [("Content-Type", "application/json")]
        let body = Array((try? JSONEncoder().encode(UploadAttempt.Report(attempts: attempts))) ?? Data())
        if name.hasPrefix("flaky-"), attempts.count == 1 {
            out.send(503, "Unavailable", headers: [("Retry-After", "1")], body: Array("busy".utf8))
        } else if name.hasPrefix("auth-"),
            request.head.headers.first(name: "Authorization") != "Bearer \(name.dropFirst("auth-".count))"
        {
            out.send(401, "Unauthorized", headers: [("WWW-Authenticate", "Bearer")], body: Array("denied".utf8))
        } else if name.hasPrefix("gated-") {
            hold(at: String(name.dropFirst("gated-".count)), out) { responder, _ in
                responder.send(200, headers: json, body: body)
            }
        } else if name.hasPrefix("dropped-") {
            hold(at: String(name.dropFirst("dropped-".count)), out) { responder, _ in responder.close() }
        } else {
            out.send(200, headers: json, body: body)
        }
    }

    private func createItem(_ request: IncomingRequest, _ out: Responder) {
        let json = [("Content-Type", "application/json")]
        let object = try? JSONSerialization.jsonObject(with: Data(request.bodyPrefix)) as? [String: Any]
        guard let name = object?["name"] as? String, !name.isEmpty else {
            out.send(400, "Bad Request", headers: json, body: Array(#"{"message":"an item needs a name"}"#.utf8))
            return
        }
        var item: [String: Any] = ["id": "new", "name": name]
        if let price = object?["price"] as? Int { item["price"] = price }
        let body = (try? JSONSerialization.data(withJSONObject: item, options: [.sortedKeys])) ?? Data()
        out.send(201, "Created", headers: json, body: Array(body))
    }
}

/// One body `PUT /openapi/uploads/<name>` received, as the server counted it.
public struct UploadAttempt: Codable, Sendable, Equatable {
    /// What the route answers: every body received for the name so far, oldest first.
    public struct Report: Codable, Sendable {
        public var attempts: [UploadAttempt]
    }

    public var bodyLength: Int
    public var bodyCRC: UInt32

    public init(bodyLength: Int, bodyCRC: UInt32) {
        self.bodyLength = bodyLength
        self.bodyCRC = bodyCRC
    }
}
