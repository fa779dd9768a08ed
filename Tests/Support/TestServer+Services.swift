import CourierCore
import Foundation
import NIOCore
import NIOHTTP1

/// Routes and hooks for the services tests: gates that hold responses until a test opens
/// them, bearer-token checks, flaky endpoints with `Retry-After`, and JSON envelopes.
///
/// - `/gate?name=`: answers `{"gate": name, "served": n}` once `openGate(name)` was called.
/// - `/auth?valid=`: 200 when `Authorization: Bearer <valid>`, else 401.
/// - `/flaky?key=&failures=&status=&retryAfter=`: the first `failures` requests for `key` get
///   `status` (default 503) with `Retry-After: <retryAfter>` when given; later ones 200.
/// - `/quota?key=`: the first request for `key` gets 429 with `Retry-After: 30`, later ones 200.
/// - `/slow-first?key=&slow=&delayMs=`: the first `slow` (default 1) requests for `key` answer
///   `{"served": n}` after `delayMs` (default 5000), later ones at once.
/// - `/envelope?count=`: `{"data": {"items": [{"id": i, "name": "item-i"}...]}, "meta": {...}}`.
extension TestServer {
    struct Gate {
        var isOpen = false
        var served = 0
        /// The most requests held at once.
        var mostHeld = 0
        var pending: [@Sendable () -> Void] = [] {
            didSet {  // under the gates' lock, so counts stay in order
                held.set(pending.count)
                mostHeld = max(mostHeld, pending.count)
            }
        }
        /// How many requests wait at the gate, for ``TestServer/waitUntilHeld(_:count:timeout:)``.
        let held = CountWaiters()
    }

    /// Returns true once `count` requests are held at `/gate?name=<name>`, or false after
    /// `timeout`.
    @discardableResult
    public func waitUntilHeld(_ name: String, count: Int, timeout: Duration = .seconds(60)) async -> Bool {
        let held = gates.withLock { gates in
            if gates[name] == nil { gates[name] = Gate() }
            return gates[name]!.held
        }
        return await held.wait(until: count, timeout: timeout)
    }

    /// Releases every request held at `/gate?name=<name>` and lets later ones through at once.
    public func openGate(_ name: String) {
        let pending = gates.withLock { gates in
            gates[name, default: Gate()].isOpen = true
            defer { gates[name]?.pending = [] }
            return gates[name]?.pending ?? []
        }
        for release in pending { release() }
    }

    /// Releases the requests held at `/gate?name=<name>` now (returns how many); later ones
    /// are held again.
    @discardableResult
    public func releaseHeld(_ name: String) -> Int {
        let pending = gates.withLock { gates in
            defer { gates[name]?.pending = [] }
            return gates[name]?.pending ?? []
        }
        for release in pending { release() }
        return pending.count
    }

    /// The most requests held at `/gate?name=<name>` at once, and how many it has seen.
    public func gateCounts(_ name: String) -> (mostHeld: Int, served: Int) {
        gates.withLock { ($0[name]?.mostHeld ?? 0, $0[name]?.served ?? 0) }
    }

    /// Requests waiting at a gate.
    public func heldAtGate(_ name: String) -> Int { gates.withLock { $0[name]?.pending.count ?? 0 } }

    /// Returns true once the server has seen `count` connections close in all, or false after
    /// `timeout`.
    @discardableResult
    public func waitForClosedConnections(_ count: Int, timeout: Duration = .seconds(60)) async -> Bool {
        await closedConnections.wait(until: count, timeout: timeout)
    }

    func connectionClosed() { closedConnections.add() }

    /// Holds the request at gate `name` until ``openGate(_:)`` (answering at once when it is
    /// open), then calls `respond` on the connection's loop with the gate's served count.
    func hold(at name: String, _ out: Responder, respond: @escaping @Sendable (Responder, Int) -> Void) {
        let loop = out.context.eventLoop
        let bound = NIOLoopBound(out, eventLoop: loop)
        let release: @Sendable (Int) -> Void = { served in
            loop.execute { respond(bound.value, served) }
        }
        let servedNow: Int? = gates.withLock { gates in
            gates[name, default: Gate()].served += 1
            let served = gates[name]!.served
            if gates[name]!.isOpen { return served }
            gates[name]!.pending.append { release(served) }
            return nil
        }
        if let servedNow { release(servedNow) }
    }

    /// Counts one more request for `key` and returns how many it has seen (from 1).
    func nextCount(_ key: String) -> Int {
        flakyCounts.withLock { counts in
            counts[key, default: 0] += 1
            return counts[key]!
        }
    }

    func servicesRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        let json = [("Content-Type", "application/json")]
        switch request.path {
        case "/gate":
            let name = request.query("name") ?? "default"
            let headers = json + (request.query("cc").map { [("Cache-Control", $0)] } ?? [])
            hold(at: name, out) { responder, served in
                responder.send(200, headers: headers, body: Array(#"{"gate":"\#(name)","served":\#(served)}"#.utf8))
            }
        case "/auth":
            let valid = request.query("valid") ?? "good"
            let header = request.head.headers.first(name: "Authorization")
            if header == "Bearer \(valid)" {
                out.send(200, headers: json, body: Array(#"{"ok":true}"#.utf8))
            } else {
                out.send(401, "Unauthorized", headers: [("WWW-Authenticate", "Bearer")], body: Array("denied".utf8))
            }
        case "/flaky":
            let key = request.query("key") ?? "default"
            let failures = request.intQuery("failures", default: 1)
            let attempt = nextCount(key)
            if attempt <= failures {
                var headers = [("Content-Type", "text/plain")]
                if let retryAfter = request.query("retryAfter") { headers.append(("Retry-After", retryAfter)) }
                out.send(
                    request.intQuery("status", default: 503), "Unavailable", headers: headers, body: Array("busy".utf8))
            } else {
                out.send(200, headers: json, body: Array(#"{"attempts":\#(attempt)}"#.utf8))
            }
        case "/quota":
            // A quota spent by the first request for `key`: 429 with `Retry-After: 30`; later
            // requests get `{"served": n}`.
            let served = nextCount("quota:" + (request.query("key") ?? "default"))
            if served == 1 {
                out.send(429, "Too Many Requests", headers: [("Retry-After", "30")], body: Array("spent".utf8))
            } else {
                out.send(200, headers: json, body: Array(#"{"served":\#(served)}"#.utf8))
            }
        case "/slow-first":
            // The first `slow` requests for `key` answer after `delayMs`, later ones at once; the
            // body says which request of the key this was.
            let served = nextCount("slow-first:" + (request.query("key") ?? "default"))
            let body = Array(#"{"served":\#(served)}"#.utf8)
            if served <= request.intQuery("slow", default: 1) {
                out.after(milliseconds: request.intQuery("delayMs", default: 5000)) {
                    out.send(200, headers: json, body: body)
                }
            } else {
                out.send(200, headers: json, body: body)
            }
        case "/envelope":
            let count = request.intQuery("count", default: 3)
            let items = (0..<count).map { #"{"id":\#($0),"name":"item-\#($0)"}"# }.joined(separator: ",")
            let body = #"{"data":{"items":[\#(items)],"total":\#(count)},"meta":{"page":1,"ignored":[1,2,{"x":null}]}}"#
            out.send(200, headers: json, body: Array(body.utf8))
        default:
            return false
        }
        return true
    }
}
