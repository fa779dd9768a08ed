// libFuzzer target: the response head as curl hands it over, one line at a time (the input is
// split after each `\n`), through both paths the transport has: `RawResponseHead` on the loop
// thread then its `response()`, and `ResponseHeadParser` directly.
//
// Invariants beyond "no crash": when both paths accept the head they build the same response
// and complete on the same line; the raw head's sizing hints agree with the checked head; the
// size limit is never exceeded by an accepted head.
@testable import CourierTransport
import FuzzSupport
import HTTPTypes

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
    return (response, completedAt, parser.contentLength)
}

/// The transport's path: the raw head on the loop thread, then the checked response.
func parseRaw(_ lines: [UnsafeRawBufferPointer], limit: Int) -> (HTTPResponse, Int, RawResponseHead)? {
    var head = RawResponseHead(limit: limit)
    var completedAt: Int?
    for (index, line) in lines.enumerated() {
        do {
            if try head.consume(line) { completedAt = index }
        } catch {
            check(completedAt == nil, "the raw head threw on a line after it was complete")
            return nil
        }
    }
    guard let completedAt else { return nil }
    check(head.isComplete && head.lines.count <= limit, "a complete raw head exceeds its limit")
    guard let response = try? head.response() else { return nil }
    return (response, completedAt, head)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let split = lines(of: bytes)
    for limit in [Int.max, max(1, count / 2)] {
        let direct = parseDirectly(split, limit: limit)
        let raw = parseRaw(split, limit: limit)
        guard let (response, line, contentLength) = direct, let (rawResponse, rawLine, head) = raw else { continue }
        check(line == rawLine, "the two paths completed the head on different lines")
        check(response == rawResponse, "the two paths built different responses")
        check(response.status.code == head.status, "the raw head's status differs")
        check(
            head.hasLocation == (response.headerFields[.location] != nil), "the raw head's Location flag differs")
        check(head.contentLength == contentLength, "the raw head's Content-Length differs")
    }
    return 0
}
