import Foundation
import Testing

@testable import CourierServices

/// The `text/event-stream` parser against the HTML standard's examples and rules (§9.2.6),
/// fed whole, byte by byte and split at every position.
@Suite("Event stream parser")
struct EventStreamParserTests {
    /// The events of `stream` fed in one piece.
    static func events(_ stream: String, limit: Int = 1 << 20) throws -> [ServerSentEvent] {
        try events(bytes: Array(stream.utf8), limit: limit)
    }

    static func events(bytes: [UInt8], limit: Int = 1 << 20) throws -> [ServerSentEvent] {
        var parser = EventStreamParser(maximumEventSize: limit)
        var events: [ServerSentEvent] = []
        try parser.feed(bytes) { events.append($0) }
        return events
    }

    /// The events of `bytes` fed in the given pieces.
    static func events(bytes: [UInt8], splitAt cuts: [Int]) throws -> [ServerSentEvent] {
        var parser = EventStreamParser()
        var events: [ServerSentEvent] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            try parser.feed(bytes[start..<cut]) { events.append($0) }
            start = cut
        }
        return events
    }

    static func message(_ data: String, id: String = "", event: String = "message") -> ServerSentEvent {
        ServerSentEvent(event: event, data: data, id: id, retry: nil)
    }

    @Test("the standard's stock ticker: three data lines make one event, joined with line feeds")
    func multiLineData() throws {
        #expect(try Self.events("data: YHOO\ndata: +2\ndata: 10\n\n") == [Self.message("YHOO\n+2\n10")])
    }

    @Test("comments are skipped; an id persists and an empty id clears it; one space after the colon goes")
    func idsAndComments() throws {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        #expect(
            try Self.events(stream) == [
                Self.message("first event", id: "1"), Self.message("second event"), Self.message(" third event"),
            ])
    }

    @Test("a data field with no value makes an empty event; an event the stream does not end is dropped")
    func emptyDataAndUnfinishedEvents() throws {
        #expect(try Self.events("data\n\ndata\ndata\n\ndata:") == [Self.message(""), Self.message("\n")])
        #expect(try Self.events("data:test\n\ndata: test\n\n") == [Self.message("test"), Self.message("test")])
    }

    @Test("event types name one event each; a block without data dispatches nothing and forgets its type")
    func eventTypes() throws {
        let stream = "event: add\ndata: 1\n\ndata: 2\n\nevent: remove\n\ndata: 3\n\n"
        #expect(
            try Self.events(stream) == [
                Self.message("1", event: "add"), Self.message("2"), Self.message("3"),
            ])
    }

    @Test("CR, LF and CRLF all end lines, also when a CRLF is split between two chunks")
    func lineEndings() throws {
        let expected = [Self.message("a\nb", id: "7"), Self.message("c", id: "7")]
        for stream in ["data: a\rdata: b\rid: 7\r\rdata: c\r\r", "data: a\r\ndata: b\nid: 7\r\n\rdata: c\n\r\n"] {
            #expect(try Self.events(stream) == expected, "\(stream.debugDescription)")
        }
        let bytes = Array("data: x\r\ndata: y\r\n\r\n".utf8)
        // The CR ends one chunk, its LF starts the next: one line end, not two (two would be a
        // blank line, and dispatch "x" alone).
        #expect(try Self.events(bytes: bytes, splitAt: [8]) == [Self.message("x\ny")])
        #expect(try Self.events(bytes: bytes, splitAt: [8, 17, 19]) == [Self.message("x\ny")])
    }

    @Test("any split of a stream gives the same events as the whole")
    func everySplit() throws {
        let streams = [
            "\u{FEFF}event: a\r\ndata: é😀\nid: 1\r\rretry: 250\ndata\n\n: c\ndata:x\n\n",
            "data: YHOO\ndata: +2\ndata: 10\n\n",
            "id: 5\nevent:t\ndata:  two  spaces\r\n\r\ndata:\n\n",
        ]
        for stream in streams {
            let bytes = Array(stream.utf8)
            let whole = try Self.events(bytes: bytes)
            #expect(!whole.isEmpty)
            for cut in 0...bytes.count {
                #expect(try Self.events(bytes: bytes, splitAt: [cut]) == whole, "cut at \(cut)")
            }
            #expect(try Self.events(bytes: bytes, splitAt: Array(1..<bytes.count)) == whole, "byte by byte")
        }
    }

    @Test("a byte-order mark is skipped at the start only; the start of one that is not stays")
    func byteOrderMark() throws {
        #expect(try Self.events("\u{FEFF}data: a\n\n") == [Self.message("a")])
        // A second mark is part of the line: its field name is not `data`.
        #expect(try Self.events("\u{FEFF}\u{FEFF}data: a\n\n").isEmpty)
        // EF BB then "data...": not a mark; the two bytes begin the first line's field name.
        #expect(try Self.events(bytes: [0xEF, 0xBB] + Array("data: a\n\ndata: b\n\n".utf8)) == [Self.message("b")])
        #expect(try Self.events(bytes: [0xEF] + Array("\ndata: b\n\n".utf8)) == [Self.message("b")])
    }

    @Test("retry takes ASCII digits only; it sets the reconnection time with or without an event")
    func retry() throws {
        var parser = EventStreamParser()
        var events: [ServerSentEvent] = []
        try parser.feed(Array("retry: 1500\n\n".utf8)) { events.append($0) }
        #expect(events.isEmpty)
        #expect(parser.reconnectionTime == .milliseconds(1500))
        for ignored in ["retry: 10a", "retry: -5", "retry: 1.5", "retry:", "retry: 99999999999999999999999"] {
            try parser.feed(Array("\(ignored)\n\n".utf8)) { events.append($0) }
            #expect(parser.reconnectionTime == .milliseconds(1500), "\(ignored)")
        }
        try parser.feed(Array("retry: 20\ndata: d\n\ndata: e\n\n".utf8)) { events.append($0) }
        #expect(events.map(\.retry) == [.milliseconds(20), nil])
        #expect(parser.reconnectionTime == .milliseconds(20))
    }

    @Test("an id with a NUL is ignored; unknown fields are ignored; invalid UTF-8 becomes U+FFFD")
    func oddFields() throws {
        #expect(try Self.events("id: 3\n\nid: 4\u{0}5\ndata: a\n\n") == [Self.message("a", id: "3")])
        #expect(try Self.events("foo: bar\ndata: a\nDATA: b\n\n") == [Self.message("a")])
        let invalid = Array("data: ".utf8) + [0xFF, 0xC3] + Array("\n\n".utf8)
        #expect(try Self.events(bytes: invalid) == [Self.message("\u{FFFD}\u{FFFD}")])
    }

    @Test("a line or an event's data over the limit fails with eventTooLarge, whatever the chunking")
    func limits() throws {
        let long = String(repeating: "x", count: 100)
        #expect(throws: EventStreamParser.Failure.eventTooLarge(limit: 64)) {
            try Self.events("data: \(long)\n\n", limit: 64)
        }
        // Short lines adding up past the limit in one event.
        let many = String(repeating: "data: 0123456789\n", count: 10) + "\n"
        #expect(throws: EventStreamParser.Failure.eventTooLarge(limit: 64)) { try Self.events(many, limit: 64) }
        // A line that never ends fails once past the limit, not at the end of the stream.
        var parser = EventStreamParser(maximumEventSize: 64)
        #expect(throws: EventStreamParser.Failure.eventTooLarge(limit: 64)) {
            for _ in 0..<100 { try parser.feed(Array("yyyyyyyy".utf8)) { _ in } }
        }
        // Under the limit, the same events go through.
        #expect(try Self.events(String(repeating: "data: 0123456789\n\n", count: 10), limit: 64).count == 10)
    }

    @Test("an id becomes the last event ID when its block ends, not before; restart keeps the last one")
    func idAtDispatch() throws {
        var parser = EventStreamParser()
        var events: [ServerSentEvent] = []
        try parser.feed(Array("id: 1\ndata: a\n\nid: 2\ndata: b\n".utf8)) { events.append($0) }
        #expect(parser.lastEventID == "1")
        parser.restart()
        #expect(parser.lastEventID == "1")
        try parser.feed(Array("data: c\n\nid: 5\n\n".utf8)) { events.append($0) }
        #expect(events.map(\.id) == ["1", "1"])
        #expect(events.map(\.data) == ["a", "c"])
        #expect(parser.lastEventID == "5")  // a block with an id and no data sets it too
    }

    @Test("a line of exactly the limit passes; one byte more fails, fed whole or byte by byte")
    func limitBoundary() throws {
        let limit = 16
        let exact = "data:" + String(repeating: "x", count: limit - 5) + "\n\n"
        #expect(try Self.events(exact, limit: limit).count == 1)
        let over = "data:" + String(repeating: "x", count: limit - 4) + "\n\n"
        #expect(throws: EventStreamParser.Failure.eventTooLarge(limit: limit)) { try Self.events(over, limit: limit) }
        var parser = EventStreamParser(maximumEventSize: limit)
        #expect(throws: EventStreamParser.Failure.eventTooLarge(limit: limit)) {
            for byte in over.utf8 { try parser.feed([byte]) { _ in } }
        }
    }
}
