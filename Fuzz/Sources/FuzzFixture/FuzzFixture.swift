// libFuzzer target: `.mock` fixture files (`MockResponse(fixture:source:)`), either a JSON body
// alone or a whole response (status line, header lines, blank line, body).
//
// Invariants beyond "no crash": a refused fixture is `malformedResponse` or `decodingFailed`; an
// accepted whole response has a status in 100...999, at most one field per header line, and a
// body that is the input's tail; a bare JSON fixture is a 200 whose body is the input.
import CourierTesting
import CourierTransport
import FoundationEssentials
import FuzzSupport
import HTTPTypes

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    let response: MockResponse
    do throws(ServiceError) {
        response = try MockResponse(fixture: bytes, source: "fuzz.mock")
    } catch {
        check(error.code == .malformedResponse || error.code == .decodingFailed, "\(error.code): \(error.message)")
        return 0
    }
    if bytes.starts(with: Array("HTTP/".utf8)) {
        check((100...999).contains(response.status.code), "status \(response.status)")
        check(bytes.reversed().starts(with: response.body.reversed()), "the body is not the input's tail")
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
        check(response.headerFields.count < lines, "more fields than lines")
    } else {
        check(response.status == 200 && response.body == bytes, "a JSON fixture changed")
    }
    // What mock mode hands the coordinator.
    let head = HTTPResponse(status: response.status, headerFields: response.headerFields)
    check(head.status.code == response.status.code, "the head's status differs")
    return 0
}
