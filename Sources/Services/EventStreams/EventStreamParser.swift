/// The incremental `text/event-stream` parser of the HTML standard (§9.2.6, "Interpreting an
/// event stream"): bytes in, in chunks of any size and split anywhere; events out, each once
/// its block ends with a blank line.
///
/// A state machine over bytes: no lock, no task, no allocation per byte or per field name. Lines end with CRLF,
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

    /// The stream's last event ID: set when a block ends (a blank line), kept across events,
    /// and what a reconnection sends. An `id` in a block the stream never ended does not count.
    private(set) var lastEventID = ""
    /// The last `id` field read (the standard's "last event ID buffer"), which becomes the
    /// stream's when its block ends.
    private var idBuffer = ""
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

    init(maximumEventSize: Int = 1 << 20, lastEventID: String = "") {
        self.maximumEventSize = maximumEventSize
        self.lastEventID = lastEventID
        idBuffer = lastEventID
    }

    /// Starts over for the next connection's response: what a block or a line held is dropped,
    /// a byte-order mark may come again; the last event ID and reconnection time stay (they
    /// belong to the stream, not to one response).
    mutating func restart() {
        line.removeAll(keepingCapacity: true)
        data.removeAll(keepingCapacity: true)
        hasData = false
        eventType = ""
        blockRetry = nil
        idBuffer = lastEventID
        afterCR = false
        bomMatched = 0
        atStart = true
    }

    /// Feeds the next bytes of the stream; `emit` gets each event they complete, in order.
    mutating func feed(_ bytes: some Sequence<UInt8>, emit: (ServerSentEvent) throws -> Void) throws {
        let fed: Void? = try bytes.withContiguousStorageIfAvailable { try feed(buffer: $0, emit: emit) }
        if fed == nil { try Array(bytes).withUnsafeBufferPointer { try feed(buffer: $0, emit: emit) } }
    }

    /// The parser proper: line ends one byte at a time, the bytes between them in one append.
    private mutating func feed(buffer: UnsafeBufferPointer<UInt8>, emit: (ServerSentEvent) throws -> Void) throws {
        let lineFeed = UInt8(ascii: "\n")
        let carriageReturn = UInt8(ascii: "\r")
        var index = 0
        while index < buffer.count {
            let byte = buffer[index]
            index += 1
            if atStart, !passesByteOrderMark(byte) { continue }
            switch byte {
            case lineFeed:
                if afterCR {
                    afterCR = false
                    continue
                }
                try endLine(emit: emit)
            case carriageReturn:
                afterCR = true
                try endLine(emit: emit)
            default:
                afterCR = false
                var end = index
                while end < buffer.count, buffer[end] != lineFeed, buffer[end] != carriageReturn { end += 1 }
                guard line.count + 1 + (end - index) <= maximumEventSize else {
                    throw Failure.eventTooLarge(limit: maximumEventSize)
                }
                line.append(byte)
                line.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[index..<end]))
                index = end
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
        if name.elementsEqual("data".utf8) {
            guard data.count + value.count < maximumEventSize else {
                throw Failure.eventTooLarge(limit: maximumEventSize)
            }
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        } else if name.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        } else if name.elementsEqual("retry".utf8), let milliseconds = Self.digits(value) {
            reconnectionTime = .milliseconds(milliseconds)
            blockRetry = reconnectionTime
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

    /// A blank line: the block's ID becomes the stream's; its event goes out when it has data;
    /// the block's buffers reset either way (the ID buffer stays, as the standard's does).
    private mutating func dispatch(emit: (ServerSentEvent) throws -> Void) throws {
        lastEventID = idBuffer
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
