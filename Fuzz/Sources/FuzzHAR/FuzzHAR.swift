// libFuzzer target: HAR files, read as `HARReplayTransport(contentsOf:)` reads them (Foundation's
// JSONDecoder into `HAR.Document`), replayed by `HARReplayTransport`: every entry's own request
// is sent back to it.
//
// Invariants beyond "no crash": a recorded request always finds a recording (never
// `mockMissing`); a recorded failure replays as a `ServiceError`; a recorded response replays
// with one of the statuses recorded for that request.
import CourierTransport
import Foundation
import FuzzSupport
import HTTPTypes

@testable import CourierTesting  // the HAR model is package API

/// The request a recorded entry describes, or nil when its method or URL cannot be a request.
func request(for entry: HAR.Entry) -> (HTTPRequest, RequestBody?)? {
    guard let method = HTTPRequest.Method(entry.request.method), let schemeEnd = entry.request.url.range(of: "://")
    else { return nil }
    let scheme = String(entry.request.url[..<schemeEnd.lowerBound])
    guard !scheme.isEmpty, scheme.utf8.allSatisfy({ $0 < 0x80 && ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }) else {
        return nil
    }
    let rest = entry.request.url[schemeEnd.upperBound...]
    // Only URLs a request can say back byte for byte (a path, no bytes HTTPTypes would replace).
    guard let pathStart = rest.firstIndex(of: "/"), !rest[..<pathStart].contains("?") else { return nil }
    let authority = String(rest[..<pathStart])
    let path = String(rest[pathStart...])
    let request = HTTPRequest(method: method, scheme: scheme, authority: authority, path: path)
    guard request.scheme == scheme, request.authority == authority, request.path == path else { return nil }
    let body = entry.request.postData.map { post in
        RequestBody.bytes(
            post._encoding == "base64" ? (Data(base64Encoded: post.text) ?? Data()) : Data(post.text.utf8))
    }
    return (request, body)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    guard let document = try? JSONDecoder().decode(HAR.Document.self, from: bytes) else { return 0 }
    let replay = HARReplayTransport(document)
    for entry in document.log.entries {
        guard let (request, body) = request(for: entry) else { continue }
        let outcome = blocking { () async -> Result<Int, ServiceError> in
            do {
                return .success(try await replay.send(request, body: body, options: TransferOptions()).head.status.code)
            } catch let error as ServiceError {
                return .failure(error)
            } catch {
                fatalError("fuzz invariant: replay threw a \(type(of: error)), not a ServiceError")
            }
        }
        switch outcome {
        case .success(let status):
            let recorded = document.log.entries.filter { $0._courierError == nil }.map(\.response.status)
            check(recorded.contains(status), "replayed status \(status) was never recorded")
        case .failure(let error):
            check(error.code != .mockMissing, "a recorded request found no recording: \(error.message)")
        }
    }
    return 0
}
