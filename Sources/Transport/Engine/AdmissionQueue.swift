/// Transfers a loop has accepted but curl could not run yet, in the order they arrived.
///
/// curl runs only as many transfers as the loop's connection limits allow (per host and in
/// all); what it cannot run it would keep in its own pending list, each with an easy handle,
/// its buffers and a header list already allocated. So the loop hands curl only what it can
/// run and keeps the rest here: a `Transfer` (the request, the caller's continuation) and
/// nothing else until it is admitted.
///
/// Capacity is counted in stream units: a transfer on a connection that does not multiplex
/// takes ``unitsPerConnection`` (a whole connection), one on a multiplexed connection takes
/// one (a stream; curl's default is 100 concurrent streams per HTTP/2 connection). An origin
/// multiplexes when it was asked with HTTP/2 prior knowledge or once one of its transfers
/// came back over HTTP/2 or 3: until then an `https` origin is taken for HTTP/1.1 and
/// admits one transfer per connection, the safe guess.
///
/// Order: first in, first out within an origin and, when the total limit is what holds
/// transfers back, across origins too (the origin whose oldest waiting transfer arrived
/// first goes first). A queued transfer that is cancelled leaves the count at once and its
/// slot is skipped when it reaches the head.
///
/// A state machine: no lock, no continuation, no clock. The loop (on its thread) feeds it the
/// events and performs what they return:
/// - ``enqueue(_:)``: a transfer arrives and waits.
/// - ``next()``: the next transfer curl has room for, if any: the loop hands it to curl.
/// - ``release(_:httpVersion:)``: a transfer curl ran ended; its units go back, and an answer
///   over HTTP/2 or 3 teaches its origin to multiplex.
/// - ``forget(_:)``: a waiting transfer was cancelled or failed.
/// - ``removeExpired(_:)``: waiting transfers whose total timeout ran out: the loop fails them.
/// - ``removeAll()``: shutdown: the loop fails every waiting transfer, in arrival order.
/// The queue keeps a transfer's place in the transfer itself (`admission`, `origin`), so no
/// event looks a transfer up. ``invariantViolations()`` states what holds after each event;
/// `AdmissionQueueTests` drives thousands of random event sequences against a model of it.
struct AdmissionQueue {
    static let unitsPerConnection = 100

    /// One origin's running units and waiting transfers. A class, so that the queue mutates
    /// it in place while it walks the origins. Only the loop thread touches it: the queue sits
    /// in the loop's ``LoopBound`` state, and a transfer's `origin` is read there only.
    final class Origin {
        let key: String
        var units = 0
        var multiplexes: Bool
        var waiting = FIFO<Transfer>()
        /// Whether `origins` holds it (a dropped origin may live on as the queue's `recent`).
        var isListed = true

        init(key: String, multiplexes: Bool) {
            self.key = key
            self.multiplexes = multiplexes
        }

        var weight: Int { multiplexes ? 1 : AdmissionQueue.unitsPerConnection }

        /// Drops the slots of transfers that left while waiting; returns the head's sequence.
        func headSequence() -> Int? {
            while let head = waiting.first {
                if case .waiting(let sequence) = head.admission { return sequence }
                _ = waiting.removeFirst()
            }
            return nil
        }
    }

    /// Per-host and total capacity in stream units; `nil` is unlimited.
    let perHost: Int?
    let total: Int?
    private(set) var origins: [String: Origin] = [:]
    private var units = 0
    private var sequence = 0
    /// Transfers waiting and not cancelled.
    private(set) var count = 0
    /// The origin of the last transfer queued: the next transfer to the same origin (the usual
    /// case) finds it without building its key, and, when it was dropped meanwhile (one
    /// transfer at a time), puts it back as new rather than making another.
    private var recent: Origin?

    init(limits: CurlEventLoop.Limits) {
        perHost = limits.connectionsPerHost > 0 ? limits.connectionsPerHost * Self.unitsPerConnection : nil
        total = limits.connections > 0 ? limits.connections * Self.unitsPerConnection : nil
    }

    var isEmpty: Bool { count == 0 }

    /// Whether an origin is known to multiplex before any transfer ran: HTTP/2 with prior
    /// knowledge, unless each such transfer needs a connection of its own (cleartext on a libcurl
    /// before 8.0.0, ``Transfer/needsFreshConnection``), which makes it weigh as HTTP/1.1 does.
    static func multiplexesFromStart(_ transfer: Transfer) -> Bool {
        transfer.request.options.httpVersion.mode == .http2PriorKnowledge && !transfer.needsFreshConnection
    }

    /// Queues `transfer` behind those of its origin.
    mutating func enqueue(_ transfer: Transfer) {
        sequence &+= 1
        transfer.admission = .waiting(sequence: sequence)
        let origin: Origin
        if let recent, transfer.request.hasOrigin(recent.key) {
            origin = recent
            if !recent.isListed {
                // Dropped when it went idle: back as a new origin would be, knowing nothing.
                recent.multiplexes = Self.multiplexesFromStart(transfer)
                recent.isListed = true
                origins[recent.key] = recent
            }
        } else {
            let key = transfer.request.originKey
            if let known = origins[key] {
                origin = known
            } else {
                origin = Origin(key: key, multiplexes: Self.multiplexesFromStart(transfer))
                origins[key] = origin
            }
            recent = origin
        }
        origin.waiting.append(transfer)
        transfer.origin = origin
        count += 1
    }

    /// Takes a waiting transfer out of the count (it was cancelled or failed while queued);
    /// its slot is dropped when it reaches the head.
    mutating func forget(_ transfer: Transfer) {
        guard case .waiting = transfer.admission else { return }
        transfer.admission = .gone
        // An origin left with nothing running and nothing waiting is dropped, as in `release`.
        if let origin = transfer.origin, origin.isListed, origin.units == 0, origin.headSequence() == nil {
            origins[origin.key] = nil
            origin.isListed = false
        }
        transfer.origin = nil
        count -= 1
    }

    /// The next transfer curl has room for, marked admitted and counted against the limits;
    /// `nil` when none fits.
    mutating func next() -> Transfer? {
        guard count > 0 else { return nil }
        var best: Origin?
        var bestSequence = Int.max
        for origin in origins.values {
            guard let sequence = origin.headSequence() else { continue }
            if let perHost, origin.units + origin.weight > perHost { continue }
            if sequence < bestSequence { (best, bestSequence) = (origin, sequence) }
        }
        guard let best else { return nil }
        let weight = best.weight
        if let total, units + weight > total { return nil }
        guard let transfer = best.waiting.removeFirst() else { return nil }
        best.units += weight
        units += weight
        count -= 1
        transfer.admission = .admitted(units: weight)
        return transfer
    }

    /// Gives back what an admitted transfer held; `httpVersion` is what it ran over, when known.
    mutating func release(_ transfer: Transfer, httpVersion: Int? = nil) {
        guard case .admitted(let weight) = transfer.admission else { return }
        transfer.admission = .gone
        units -= weight
        guard let origin = transfer.origin else { return }
        transfer.origin = nil
        origin.units -= weight
        if let httpVersion, httpVersion >= 2, !transfer.needsFreshConnection { origin.multiplexes = true }
        // An origin with nothing running and nothing waiting is dropped, so that a crawler's
        // hosts do not accumulate; what it learned about multiplexing goes with it.
        if origin.units == 0 && origin.headSequence() == nil {
            origins[origin.key] = nil
            origin.isListed = false
        }
    }

    /// Every transfer still waiting, in arrival order, removed from the queue (for shutdown).
    mutating func removeAll() -> [(sequence: Int, transfer: Transfer)] {
        var all: [(sequence: Int, transfer: Transfer)] = []
        for origin in origins.values {
            while let transfer = origin.waiting.removeFirst() {
                if case .waiting(let sequence) = transfer.admission {
                    transfer.admission = .gone
                    transfer.origin = nil
                    all.append((sequence, transfer))
                }
            }
        }
        count = 0
        // Origins with nothing running go, as in `release`.
        origins = origins.filter { _, origin in
            if origin.units > 0 { return true }
            origin.isListed = false
            return false
        }
        // Nothing queues after this (shutdown): the last origin need not outlive the queue's use.
        recent = nil
        return all.sorted { $0.sequence < $1.sequence }
    }

    /// Every waiting transfer for which `isExpired` holds, taken out of the count.
    mutating func removeExpired(_ isExpired: (Transfer) -> Bool) -> [Transfer] {
        var expired: [Transfer] = []
        for origin in origins.values {
            origin.waiting.forEachQueued { transfer in
                if case .waiting = transfer.admission, isExpired(transfer) { expired.append(transfer) }
            }
        }
        for transfer in expired { forget(transfer) }
        return expired
    }

    /// What must hold after every event; the queue's tests check it.
    func invariantViolations() -> [String] {
        var violations: [String] = []
        var runningUnits = 0
        var waiting = 0
        for (key, origin) in origins {
            if origin.key != key || !origin.isListed {
                violations.append("\(key): listed under another key, or unlisted")
            }
            if origin.units < 0 { violations.append("\(key): \(origin.units) units") }
            if let perHost, origin.units > perHost {
                violations.append("\(key): \(origin.units) units over \(perHost)")
            }
            runningUnits += origin.units
            var lastSequence = Int.min
            var originWaiting = 0
            origin.waiting.forEachQueued { transfer in
                guard case .waiting(let sequence) = transfer.admission else { return }
                originWaiting += 1
                if sequence <= lastSequence { violations.append("\(key): waiting out of arrival order") }
                lastSequence = sequence
                if transfer.origin !== origin { violations.append("\(key): a waiting transfer lost its origin") }
            }
            if origin.units == 0 && originWaiting == 0 { violations.append("\(key): idle, not dropped") }
            waiting += originWaiting
        }
        if runningUnits != units { violations.append("\(units) units counted, \(runningUnits) held by origins") }
        if let total, units > total { violations.append("\(units) units over the total \(total)") }
        if waiting != count { violations.append("\(count) waiting counted, \(waiting) in the lines") }
        return violations
    }

    /// The earliest total-timeout deadline among waiting transfers.
    func earliestDeadline() -> ContinuousClock.Instant? {
        var earliest: ContinuousClock.Instant?
        for origin in origins.values {
            origin.waiting.forEachQueued { transfer in
                guard case .waiting = transfer.admission, let deadline = transfer.deadline else { return }
                if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
            }
        }
        return earliest
    }
}
