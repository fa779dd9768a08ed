import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

@Suite struct RequestValidationTests {
    @Test(arguments: ["a\r\nX-Injected: 1", "a\nb", "a\0b", "a\u{7F}b", "a\u{1B}b"])
    func rawHeaderValuesWithControlCharactersAreRejected(value: String) {
        #expect(throws: ServiceError.self) { _ = try RequestValidation.field(name: "X-Test", value: value) }
    }

    @Test func validRawHeadersBecomeFields() throws {
        let field = try RequestValidation.field(name: "X-Test", value: "tab\tand unicode é")
        #expect(field.value == "tab\tand unicode é")
        #expect(throws: ServiceError.self) { _ = try RequestValidation.field(name: "Bad Name", value: "x") }
    }

    @Test func lenientlyBuiltFieldsWithControlBytesAreRejectedBeforeSending() async throws {
        try await withLoopback { server, transport in
            var request = server.request("/echo")
            // A decorator could build a field from raw bytes like this.
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Raw")!, lenientValue: Array("a\u{1}b".utf8)))
            let error = await serviceError { _ = try await transport.send(request) }
            #expect(error?.code == .invalidRequest)
            #expect(server.snapshot.requestCount == 0)
        }
    }

    @Test func pathsWithSpacesOrControlCharactersAreRejected() async throws {
        try await withLoopback { server, transport in
            for path in ["/a b", "/a\r\nHost: evil", "/é"] {
                let error = await serviceError { _ = try await transport.send(server.request(path)) }
                #expect(error?.code == .invalidRequest)
            }
            #expect(server.snapshot.requestCount == 0)
        }
    }

    @Test func onlyHTTPSchemesAreAccepted() async throws {
        let transport = CurlTransport()
        let request = HTTPRequest(method: .get, scheme: "ftp", authority: "127.0.0.1", path: "/")
        let error = await serviceError { _ = try await transport.send(request) }
        #expect(error?.code == .invalidRequest)
        await transport.shutdown()
    }
}

@Suite struct ResponseHeadParserTests {
    func parse(_ lines: [String], limit: Int = 1 << 16) throws -> HTTPResponse? {
        var parser = ResponseHeadParser(limit: limit)
        for line in lines {
            var bytes = Array(line.utf8)
            let done = try bytes.withUnsafeMutableBytes { raw in try parser.consume(UnsafeRawBufferPointer(raw)) }
            if done { return parser.response }
        }
        return nil
    }

    @Test func interimResponsesAreSkipped() throws {
        let head = try parse(["HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 201 Created\r\n", "X-A: 1\r\n", "\r\n"])
        #expect(head?.status.code == 201)
        #expect(head?.headerFields[HTTPField.Name("X-A")!] == "1")
    }

    @Test func http2StatusLinesHaveNoReason() throws {
        #expect(try parse(["HTTP/2 204\r\n", "\r\n"])?.status.code == 204)
    }

    @Test func valuesAreTrimmedAndKeepInnerSpaces() throws {
        let head = try parse(["HTTP/1.1 200 OK\r\n", "X-A:   a  b \t\r\n", "\r\n"])
        #expect(head?.headerFields[HTTPField.Name("X-A")!] == "a  b")
    }

    @Test func valuesKeepTheirBytesWhateverTheyHold() throws {
        // Plain ASCII takes a fast path; everything else the lenient one: both keep every byte.
        let values: [[UInt8]] = [
            Array("text/html; charset=utf-8".utf8), Array("a\tb".utf8), [], Array("caf\u{E9} \u{1F600}".utf8),
            [0x61, 0xFF, 0xFE, 0x62], [0x61, 0x01, 0x7F, 0x62], Array("\"quoted\" ~{}|".utf8),
        ]
        for value in values {
            var parser = ResponseHeadParser(limit: 1 << 16)
            for line in [
                Array("HTTP/1.1 200 OK\r\n".utf8), Array("X-V: ".utf8) + value + Array("\r\n".utf8), [13, 10],
            ] {
                _ = try line.withUnsafeBytes { try parser.consume($0) }
            }
            let response = parser.response
            let field = try #require(response?.headerFields.first { $0.name.rawName == "X-V" })
            let expected = HTTPField(name: field.name, lenientValue: value)
            #expect(field.withUnsafeBytesOfValue { Array($0) } == value)
            #expect(field.value == expected.value)
        }
    }

    /// A head without `Content-Encoding` skips looking for one later: the flag must see the
    /// field however its name is spelled.
    @Test(arguments: [
        ("Content-Encoding: gzip", true), ("content-encoding: gzip", true), ("CONTENT-ENCODING: gzip", true),
        ("Content-Encoding-X: gzip", false), ("Content-Type: text/plain", false),
    ])
    func contentEncodingIsNoticedInAnySpelling(_ line: String, _ expected: Bool) throws {
        var parser = ResponseHeadParser(limit: 1 << 16)
        for text in ["HTTP/1.1 200 OK\r\n", line + "\r\n", "\r\n"] {
            _ = try Array(text.utf8).withUnsafeBytes { try parser.consume($0) }
        }
        let (complete, hasContentEncoding) = (parser.isComplete, parser.hasContentEncoding)
        #expect(complete)
        #expect(hasContentEncoding == expected)
    }

    /// A common field whose line repeats is reused from the last head this thread parsed
    /// (`RecentFields`); one whose value changed, even by a byte, is built again.
    @Test func repeatedLinesReuseTheirFieldAndChangedOnesDoNot() throws {
        let values = ["nginx/1.22.1", "nginx/1.22.1", "nginx/1.22.2", "", "nginx/1.22.2", "caf\u{E9}", "a\u{1}b"]
        for value in values {
            let head = try #require(
                try parse(["HTTP/1.1 200 OK\r\n", "Server: \(value)\r\n", "ETag: \"\(value)\"\r\n", "\r\n"]))
            let server = try #require(head.headerFields.first { $0.name == .server })
            #expect(server.withUnsafeBytesOfValue { Array($0) } == Array(value.utf8))
            #expect(server == HTTPField(name: .server, lenientValue: Array(value.utf8)))
            #expect(head.headerFields[.eTag] == "\"\(value)\"")
        }
    }

    /// The fields a head must have: each line's name and bytes, built without the parser.
    static func expected(_ lines: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in lines {
            fields.append(HTTPField(name: HTTPField.Name(name)!, lenientValue: Array(value.utf8)))
        }
        return fields
    }

    static func head(_ lines: [(String, String)]) -> [String] {
        ["HTTP/1.1 200 OK\r\n"] + lines.map { "\($0.0): \($0.1)\r\n" } + ["\r\n"]
    }

    /// A head is built on the last one this thread parsed (`RecentFields`): whatever the last
    /// head was (longer, shorter, reordered, another spelling, a changed byte), the result is
    /// exactly this head's lines. Synchronous, so that every head is parsed on one thread.
    @Test func aHeadBuiltOnTheLastOneHoldsExactlyItsOwnLines() throws {
        let heads: [[(String, String)]] = [
            [("Server", "nginx"), ("Date", "Thu, 26 Nov 2026 20:00:00 GMT"), ("Content-Type", "application/json")],
            [("Server", "nginx"), ("Date", "Thu, 26 Nov 2026 20:00:01 GMT"), ("Content-Type", "application/json")],
            [("Server", "nginx"), ("Date", "Thu, 26 Nov 2026 20:00:01 GMT"), ("Content-Type", "application/json")],
            [("Server", "nginx")],
            [("Content-Type", "application/json"), ("Server", "nginx"), ("X-Extra", "1"), ("ETag", "\"a\"")],
            [("content-type", "application/json"), ("server", "nginx"), ("X-Extra", "2"), ("ETag", "\"b\"")],
            [("Content-Type", "application/json"), ("Server", "nginx"), ("X-Extra", "1"), ("ETag", "\"a\"")],
            [("Content-Type", "application/jsoN"), ("Server", "nginx"), ("X-Extra", "1"), ("ETag", "\"a\"")],
            [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Set-Cookie", "a=1")],
            [("Set-Cookie", "b=2"), ("Set-Cookie", "b=2"), ("Set-Cookie", "a=1")],
            [],
            [("Server", "nginx"), ("Date", "Thu, 26 Nov 2026 20:00:01 GMT"), ("Content-Type", "application/json")],
        ]
        for lines in heads + heads.reversed() {
            let response = try #require(try parse(Self.head(lines)))
            #expect(response.headerFields == Self.expected(lines))
            #expect(Array(response.headerFields).map { $0.name.rawName } == lines.map(\.0))
        }
    }

    /// Two parsers on one thread, one inside the other: neither takes the other's fields.
    @Test func interleavedParsersKeepTheirOwnFields() throws {
        let outer: [(String, String)] = [("Server", "a"), ("Content-Type", "text/plain"), ("ETag", "\"1\"")]
        let inner: [(String, String)] = [("Server", "b"), ("Content-Type", "text/html"), ("ETag", "\"2\"")]
        for _ in 0..<3 {
            var parser = ResponseHeadParser(limit: 1 << 16)
            let lines = Self.head(outer)
            for (index, line) in lines.enumerated() {
                if index == 2 { #expect(try parse(Self.head(inner))?.headerFields == Self.expected(inner)) }
                _ = try Array(line.utf8).withUnsafeBytes { try parser.consume($0) }
            }
            let response = parser.response
            #expect(response?.headerFields == Self.expected(outer))
            #expect(try parse(Self.head(outer))?.headerFields == Self.expected(outer))
        }
    }

    /// A parser that moves to another thread in mid-head stops using the first thread's recent
    /// fields (they have no lock, so the two threads could touch them at once) and still builds
    /// exactly its head's lines. The first thread stays alive meanwhile, so the second cannot
    /// be given its identity.
    @Test func aParserMovedToAnotherThreadLeavesTheFirstThreadsFieldsAlone() throws {
        final class Handover: @unchecked Sendable {  // one thread at a time, ordered by the semaphores
            var parser = ResponseHeadParser(limit: 1 << 16)
            var usedOnFirst = false
            var usedOnSecond = true
            var response: HTTPResponse?
            var failure: (any Error)?
        }
        let fields = [("Server", "nginx"), ("Content-Type", "application/json"), ("ETag", "\"m\"")]
        let lines = Self.head(fields)
        let handover = Handover()
        let halfParsed = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let exited = DispatchSemaphore(value: 0)
        Thread {
            do {
                // A head first, so that this thread's recent fields hold one to build on.
                _ = try Self.parseOnce(lines)
                for line in lines.prefix(2) { _ = try Self.feed(&handover.parser, line) }
                handover.usedOnFirst = handover.parser.usesRecentFields
            } catch {
                handover.failure = error
            }
            halfParsed.signal()
            finished.wait()
            exited.signal()
        }.start()
        halfParsed.wait()
        Thread {
            do {
                for line in lines.dropFirst(2) { _ = try Self.feed(&handover.parser, line) }
                handover.usedOnSecond = handover.parser.usesRecentFields
                handover.response = handover.parser.response
            } catch {
                handover.failure = error
            }
            finished.signal()
        }.start()
        exited.wait()
        if let failure = handover.failure { throw failure }
        #expect(handover.usedOnFirst)
        #expect(!handover.usedOnSecond)
        #expect(handover.response?.headerFields == Self.expected(fields))
    }

    /// Feeds one line in a buffer of exactly its size.
    static func feed(_ parser: inout ResponseHeadParser, _ line: String) throws -> Bool {
        var bytes = Array(line.utf8)
        return try bytes.withUnsafeMutableBytes { raw in try parser.consume(UnsafeRawBufferPointer(raw)) }
    }

    static func parseOnce(_ lines: [String]) throws -> HTTPResponse? {
        var parser = ResponseHeadParser(limit: 1 << 16)
        for line in lines where try feed(&parser, line) { return parser.response }
        return nil
    }

    @Test func contentLengthListsMustAgree() throws {
        #expect(try parse(["HTTP/1.1 200 OK\r\n", "Content-Length: 12 , 12,12\r\n", "\r\n"]) != nil)
        for bad in ["12, 13", "12,", ",12", "", "1x", "1234567890123456789", "12,,12"] {
            #expect(throws: ServiceError.self, "\(bad)") {
                try parse(["HTTP/1.1 200 OK\r\n", "Content-Length: \(bad)\r\n", "\r\n"])
            }
        }
    }

    @Test func anInvalidStatusLineIsMalformed() {
        #expect(throws: ServiceError.self) { try parse(["HTCPCP/1.0 418\r\n", "\r\n"]) }
        #expect(throws: ServiceError.self) { try parse(["HTTP/1.1 20 OK\r\n", "\r\n"]) }
    }

    @Test func theSizeLimitCountsTheWholeBlock() {
        #expect(throws: ServiceError.self) {
            try parse(["HTTP/1.1 200 OK\r\n", "X-A: \(String(repeating: "a", count: 100))\r\n", "\r\n"], limit: 64)
        }
    }
}
