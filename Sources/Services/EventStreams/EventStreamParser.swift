/// One event of a `text/event-stream` response, as the HTML standard's event stream
/// interpretation dispatches it.
struct ServerSentEvent: Sendable, Equatable {
    /// The event's type: its `event` field, or `message` when it had none.
    var event: String
    /// Its `data` fields, joined with line feeds.
    var data: String
    /// The stream's last event ID when the event was dispatched: set by an `id` field, in this
    /// event or an earlier one, and sent back as `Last-Event-ID` on reconnection.
    var id: String
    /// The reconnection time a `retry` field in this event's block set, if any.
    var retry: Duration?
}

/// The incremental `text/event-stream` parser of the HTML standard (§9.2.6, "Interpreting an
/// event stream"): bytes in, in chunks of any size and split anywhere; events out, each once
/// its block ends with a blank line.
///
/// A state machine over bytes: no lock, no task, no allocation per byte. Lines end with CRLF,
/// LF or CR (a CR at the end of one chunk and an LF at the start of the next are one line end);
/// a byte-order mark at the very start is skipped; lines are decoded as UTF-8, invalid bytes
/// becoming U+FFFD. An event still open when the stream ends is dropped, as the standard says.
///
/// Bounded: a line, or the data of one event, over ``maximumEventSize`` bytes stops the parser
/// with ``Failure/eventTooLarge`` instead of growing without end on a stream that never ends
/// its line.
struct EventStreamParser: Sendable {
    enum Failure: Error, Equatable {
        /// A line or an event's data passed ``EventStreamParser/maximumEventSize`` bytes.
        case eventTooLarge(limit: Int)
    }

    /// The most bytes one line, or one event's data, may take.
    let maximumEventSize: Int

    /// The stream's last event ID: kept across events, and what a reconnection sends.
    private(set) var lastEventID = ""
    /// The reconnection time the stream asked for last (`retry`), if any.
    private(set) var reconnectionTime: Duration?

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType = ""
    private var blockRetry: Duration?
    /// The last byte fed was a CR: an LF right after it ends nothing more.
    private var afterCR = false
    /// Bytes of a leading byte-order mark still to match (3 at the start, 0 once past it).
    private var bomMatched = 0
    private var atStart = true

    init(maximumEventSize: Int = 1 << 20) {
        self.maximumEventSize = maximumEventSize
    }

    /// Feeds the next bytes of the stream; `emit` gets each event they complete, in order.
    mutating func feed(_ bytes: some Sequence<UInt8>, emit: (ServerSentEvent) throws -> Void) throws {
        for byte in bytes {
            if atStart, !passesByteOrderMark(byte) { continue }
            switch byte {
            case UInt8(ascii: "\n"):
                if afterCR {
                    afterCR = false
                    continue
                }
                try endLine(emit: emit)
            case UInt8(ascii: "\r"):
                afterCR = true
                try endLine(emit: emit)
            default:
                afterCR = false
                guard line.count < maximumEventSize else { throw Failure.eventTooLarge(limit: maximumEventSize) }
                line.append(byte)
            }
        }
    }

    /// Handles the stream's first bytes: false while they may still be a byte-order mark (held
    /// back, then dropped once whole), true when `byte` is to be parsed. Bytes held as the start
    /// of a mark that turns out not to be one go to the line (none is a line end).
    private mutating func passesByteOrderMark(_ byte: UInt8) -> Bool {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        if byte == mark[bomMatched] {
            bomMatched += 1
            if bomMatched == mark.count { atStart = false }
            return false
        }
        atStart = false
        line.append(contentsOf: mark[..<bomMatched])
        return true
    }

    /// One line ended: a blank one dispatches, a comment is skipped, any other sets a field.
    private mutating func endLine(emit: (ServerSentEvent) throws -> Void) throws {
        defer { line.removeAll(keepingCapacity: true) }
        guard let first = line.first else {
            try dispatch(emit: emit)
            return
        }
        if first == UInt8(ascii: ":") { return }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = line[..<(colon ?? line.endIndex)]
        var valueStart = colon.map { line.index(after: $0) } ?? line.endIndex
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = line[valueStart...]
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            guard data.count + value.count < maximumEventSize else {
                throw Failure.eventTooLarge(limit: maximumEventSize)
            }
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if let milliseconds = Self.digits(value) {
                reconnectionTime = .milliseconds(milliseconds)
                blockRetry = reconnectionTime
            }
        default:
            break
        }
    }

    /// The value as a whole number when it is ASCII digits only (and fits); nil otherwise.
    private static func digits(_ value: ArraySlice<UInt8>) -> Int64? {
        guard !value.isEmpty else { return nil }
        var number: Int64 = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflow) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflowAgain) = shifted.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow, !overflowAgain else { return nil }
            number = sum
        }
        return number
    }

    /// A blank line: the block's event goes out when it has data; the block's buffers reset
    /// either way (the last event ID stays).
    private mutating func dispatch(emit: (ServerSentEvent) throws -> Void) throws {
        defer {
            data.removeAll(keepingCapacity: true)
            hasData = false
            eventType = ""
            blockRetry = nil
        }
        guard hasData else { return }
        let event = ServerSentEvent(
            event: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self),
            id: lastEventID, retry: blockRetry)
        try emit(event)
    }
}
