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
/// - `/envelope?count=`: `{"data": {"items": [{"id": i, "name": "item-i"}...]}, "meta": {...}}`.
extension TestServer {
    struct Gate {
        var isOpen = false
        var served = 0
        var pending: [@Sendable () -> Void] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// Returns once `count` requests are held at `/gate?name=<name>`.
    public func waitUntilHeld(_ name: String, count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = gates.withLock { gates in
                var gate = gates[name] ?? Gate()
                if gate.pending.count >= count { return true }
                gate.watchers.append((count, continuation))
                gates[name] = gate
                return false
            }
            if ready { continuation.resume() }
        }
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

    /// Requests waiting at a gate.
    public func heldAtGate(_ name: String) -> Int { gates.withLock { $0[name]?.pending.count ?? 0 } }

    /// Returns once the server has seen `count` connections close in all.
    public func waitForClosedConnections(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = closeWatch.withLock { watch in
                if watch.closed >= count { return true }
                watch.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func connectionClosed() {
        let ready = closeWatch.withLock { watch in
            watch.closed += 1
            let closed = watch.closed
            let ready = watch.watchers.filter { $0.count <= closed }.map(\.continuation)
            watch.watchers.removeAll { $0.count <= closed }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Holds the request at gate `name` until ``openGate(_:)`` (answering at once when it is
    /// open), then calls `respond` on the connection's loop with the gate's served count.
    func hold(at name: String, _ out: Responder, respond: @escaping @Sendable (Responder, Int) -> Void) {
        let loop = out.context.eventLoop
        let bound = NIOLoopBound(out, eventLoop: loop)
        let release: @Sendable (Int) -> Void = { served in
            loop.execute { respond(bound.value, served) }
        }
        let (servedNow, ready): (Int?, [CheckedContinuation<Void, Never>]) = gates.withLock { gates in
            gates[name, default: Gate()].served += 1
            let served = gates[name]!.served
            if gates[name]!.isOpen { return (served, []) }
            gates[name]!.pending.append { release(served) }
            let held = gates[name]!.pending.count
            let ready = gates[name]!.watchers.filter { $0.count <= held }.map(\.continuation)
            gates[name]!.watchers.removeAll { $0.count <= held }
            return (nil, ready)
        }
        for continuation in ready { continuation.resume() }
        if let servedNow { release(servedNow) }
    }

    func servicesRoute(_ request: IncomingRequest, _ out: Responder) -> Bool {
        let json = [("Content-Type", "application/json")]
        switch request.path {
        case "/gate":
            let name = request.query("name") ?? "default"
            hold(at: name, out) { responder, served in
                responder.send(200, headers: json, body: Array(#"{"gate":"\#(name)","served":\#(served)}"#.utf8))
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
            let attempt = flakyCounts.withLock { counts in
                counts[key, default: 0] += 1
                return counts[key]!
            }
            if attempt <= failures {
                var headers = [("Content-Type", "text/plain")]
                if let retryAfter = request.query("retryAfter") { headers.append(("Retry-After", retryAfter)) }
                out.send(request.intQuery("status", default: 503), "Unavailable", headers: headers, body: Array("busy".utf8))
            } else {
                out.send(200, headers: json, body: Array(#"{"attempts":\#(attempt)}"#.utf8))
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

/// Closed-connection count and those waiting for it.
struct CloseWatch {
    var closed = 0
    var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
}
