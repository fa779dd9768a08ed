import FuzzSupport
import HTTPTypes

// libFuzzer target: the response head as curl hands it over, one line at a time (the input is
// split after each `\n`), through `ResponseHeadParser`, as the loop thread parses it.
//
// Invariants beyond "no crash": nothing is thrown after the head completed; a complete head has
// a response with the parsed status; the `Location` flag agrees with the fields.
@testable import CourierTransport

func lines(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
    var result: [UnsafeRawBufferPointer] = []
    var start = 0
    for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
        result.append(UnsafeRawBufferPointer(rebasing: bytes[start...index]))
        start = index + 1
    }
    if start < bytes.count { result.append(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
    return result
}

/// Feeds `lines` to the checking parser; returns the response and the index of the line that
/// completed it, or nil when it threw or never completed.
func parseDirectly(_ lines: [UnsafeRawBufferPointer], limit: Int) -> (HTTPResponse, Int, Int64?)? {
    var parser = ResponseHeadParser(limit: limit)
    var completedAt: Int?
    for (index, line) in lines.enumerated() {
        do {
            if try parser.consume(line) { completedAt = index }
        } catch {
            check(completedAt == nil, "the parser threw on a line after the head was complete")
            return nil
        }
    }
    guard let completedAt else {
        check(parser.response == nil, "an incomplete head has a response")
        return nil
    }
    guard let response = parser.response else { fatalError("fuzz invariant: a complete head has no response") }
    check(response.status.code == parser.status, "the response's status is not the parsed one")
    check(parser.hasLocation == (response.headerFields[.location] != nil), "the Location flag differs")
    return (response, completedAt, parser.contentLength)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let split = lines(of: bytes)
    for limit in [Int.max, max(1, count / 2)] {
        _ = parseDirectly(split, limit: limit)
    }
    return 0
}
