import HTTPTypes
import Testing

@testable import CourierTransport

/// The head as the loop thread parses it (`ResponseHeadParser` in `Transfer`), fed line by line
/// as curl does.
@Suite struct RawResponseHeadTests {
    /// Feeds each line in a buffer of exactly its size, so a read past a line's end traps.
    func consume(_ lines: [String], limit: Int = 1 << 16) throws -> ResponseHeadParser {
        var head = ResponseHeadParser(limit: limit)
        for line in lines {
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: line.utf8.count, alignment: 1)
            defer { bytes.deallocate() }
            bytes.copyBytes(from: line.utf8)
            _ = try head.consume(UnsafeRawBufferPointer(bytes))
        }
        return head
    }

    /// Found by `scripts/fuzz.sh head`: a status line whose code is cut short by the line's end
    /// was read one byte past it.
    @Test(arguments: ["HTTP/HTT1.P/21 20", "HTTP/1.1 20", "HTTP/1.1 2", "HTTP/1.1  "])
    func aStatusCodeCutShortIsMalformedWithoutReadingPastTheLine(_ line: String) {
        #expect(throws: ServiceError.self) { _ = try consume([line]) }
    }

    @Test func theFinalHeadBecomesTheCheckedResponse() throws {
        let head = try consume([
            "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 301 Moved\r\n", "Location: /next\r\n",
            "Content-Length: 12, 12\r\n", "\r\n",
        ])
        // Read first: `#expect` cannot capture a noncopyable parser.
        let (complete, status, hasLocation, length) = (
            head.isComplete, head.status, head.hasLocation, head.contentLength
        )
        #expect(complete && status == 301 && hasLocation && length == 12)
        let parsed = head.response
        let response = try #require(parsed)
        #expect(response.status.code == 301)
        #expect(response.headerFields[.location] == "/next")
    }

    @Test func aStatusLineWithoutItsLineEndingStillParses() throws {
        let head = try consume(["HTTP/1.1 204", "\r\n"])
        let (complete, status) = (head.isComplete, head.status)
        #expect(complete && status == 204)
    }
}
