import FuzzSupport

// libFuzzer target: the `text/event-stream` parser (server-sent events).
//
// Invariants beyond "no crash": the input fed whole and fed in two pieces split anywhere (the
// first byte picks where) gives the same events, last event ID and reconnection time, or the
// same failure; with a small size limit, every event's data stays under it (as
// received: three times it once invalid bytes became U+FFFD); no event's ID has
// a NUL and no event's type is empty; restarting the parser keeps its last event ID.
@testable import CourierServices

struct Outcome: Equatable {
    var events: [ServerSentEvent] = []
    var lastEventID = ""
    var reconnectionTime: Duration?
    var failure: EventStreamParser.Failure?
}

func parse(_ pieces: [ArraySlice<UInt8>], limit: Int) -> Outcome {
    var parser = EventStreamParser(maximumEventSize: limit)
    var outcome = Outcome()
    do {
        for piece in pieces { try parser.feed(piece) { outcome.events.append($0) } }
    } catch let failure as EventStreamParser.Failure {
        outcome.failure = failure
    } catch {
        fatalError("fuzz invariant: the parser threw \(error)")
    }
    outcome.lastEventID = parser.lastEventID
    outcome.reconnectionTime = parser.reconnectionTime
    parser.restart()
    check(parser.lastEventID == outcome.lastEventID, "restart() lost the last event ID")
    return outcome
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    for limit in [1 << 20, 64] {
        let whole = parse([bytes[...]], limit: limit)
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let pieces = parse([bytes[..<split], bytes[split...]], limit: limit)
        check(whole == pieces, "splitting at \(split) changed the outcome (limit \(limit))")
        for event in whole.events {
            // The limit counts the bytes received; each invalid byte becomes U+FFFD (3 bytes).
            check(event.data.utf8.count < 3 * limit, "an event's data passed the limit \(limit)")
            check(!event.id.utf8.contains(0), "an event ID holds a NUL")
            check(!event.event.isEmpty, "an event with an empty type")
        }
    }
    return 0
}
