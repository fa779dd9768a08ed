import CourierTesting
import Foundation
import Testing

@Suite("HAR replay of broken recordings")
struct HARReplayTests {
    func entry(_ path: String, status: Int) -> String {
        """
        {"startedDateTime": "2026-11-23T10:00:00.000Z", "time": 1, "cache": {},
         "request": {"method": "GET", "url": "http://127.0.0.1:8080\(path)", "httpVersion": "HTTP/1.1",
                     "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
         "response": {"status": \(status), "statusText": "OK", "httpVersion": "HTTP/1.1",
                      "cookies": [], "headers": [], "content": {"size": 2, "mimeType": "text/plain", "text": "ok"},
                      "redirectURL": "", "headersSize": -1, "bodySize": 2},
         "timings": {"send": 0, "wait": 1, "receive": 0}}
        """
    }

    func request(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8080", path: path)
    }

    /// Found by `scripts/fuzz.sh har`: a status HTTPTypes cannot hold trapped while loading.
    @Test("a status outside 0...999 replays as malformedResponse; the other entries still replay")
    func statusOutOfRange() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString).har").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let har =
            #"{"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": ["#
            + [entry("/broken", status: 2000), entry("/negative", status: -1), entry("/fine", status: 200)]
            .joined(separator: ",") + "]}}"
        try Data(har.utf8).write(to: URL(fileURLWithPath: path))
        let replay = try HARReplayTransport(contentsOf: path)
        for broken in ["/broken", "/negative"] {
            do {
                _ = try await replay.send(request(broken), body: nil, options: TransferOptions())
                Issue.record("expected malformedResponse for \(broken)")
            } catch let error as ServiceError {
                #expect(error.code == .malformedResponse)
            }
        }
        let fine = try await replay.send(request("/fine"), body: nil, options: TransferOptions())
        #expect(fine.head.status.code == 200 && fine.body == Data("ok".utf8))
    }
}
