import CourierCore
import CourierTestServer
import Testing

@testable import CourierTransport

/// ``AdmissionQueue`` on its own: capacity per origin and in all, multiplexing learned from a
/// finished transfer, order across origins, cancellation of a waiting transfer.
@Suite("Admission queue: limits, order, multiplexing")
struct AdmissionQueueTests {
    static let pool = BodyBufferPool(capacity: 0)

    static func transfer(_ url: String, http2: Bool = false) -> Transfer {
        var options = TransferOptions()
        if http2 { options.httpVersion = .http2PriorKnowledge }
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let request = HTTPRequest(
            method: .get, scheme: String(parts[0].dropLast()), authority: String(parts[2]),
            path: "/" + (parts.count > 3 ? parts[3] : ""))
        return Transfer(request: PreparedRequest(request, body: nil, options: options), bodyBuffers: pool)
    }

    static func limits(perHost: Int, total: Int = 0) -> CurlEventLoop.Limits {
        .init(connectionsPerHost: perHost, connections: total, idleConnections: 0, idleHandles: 0)
    }

    static func drain(_ queue: inout AdmissionQueue) -> [Transfer] {
        var admitted: [Transfer] = []
        while let transfer = queue.next() { admitted.append(transfer) }
        return admitted
    }

    @Test("one transfer per connection of an origin; the rest wait until one is released")
    func perHostLimit() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 2))
        let transfers = (0..<5).map { Self.transfer("http://a.test/\($0)") }
        for transfer in transfers { queue.enqueue(transfer) }
        #expect(Self.drain(&queue).map(ObjectIdentifier.init) == transfers[..<2].map(ObjectIdentifier.init))
        #expect(queue.count == 3)
        queue.release(transfers[1], httpVersion: 1)
        #expect(Self.drain(&queue).map(ObjectIdentifier.init) == [ObjectIdentifier(transfers[2])])
        #expect(queue.count == 2)
    }

    @Test("origins are counted apart; the path does not make an origin")
    func originsApart() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        let a = (0..<2).map { Self.transfer("http://a.test/x\($0)") }
        let b = Self.transfer("http://b.test:8080/x")
        for transfer in a + [b] { queue.enqueue(transfer) }
        let admitted = Self.drain(&queue)
        #expect(admitted.map(ObjectIdentifier.init) == [ObjectIdentifier(a[0]), ObjectIdentifier(b)])
        #expect(a[0].request.originKey == "http://a.test")
        #expect(b.request.originKey == "http://b.test:8080")
    }

    @Test("a transfer finds the last origin without its key only when the key is its own")
    func recentOriginMatchesExactly() {
        let urls = [
            "http://a.test/x", "http://a.test.evil/x", "http://a.test:80/x", "https://a.test/x", "http://a.tes/x",
            "http://a.test/", "http://b.test/a.test",
        ]
        let transfers = urls.map { Self.transfer($0) }
        for transfer in transfers {
            for key in transfers.map(\.request.originKey) {
                #expect(transfer.request.hasOrigin(key) == (transfer.request.originKey == key))
            }
        }
        // Interleaved origins each keep their own count.
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        for transfer in transfers { queue.enqueue(transfer) }
        #expect(queue.origins.count == 6)
        #expect(queue.origins["http://a.test"]?.waiting.count == 2)
    }

    @Test("an origin dropped when idle comes back as new: what it learned about HTTP/2 is gone")
    func aDroppedOriginComesBackNew() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        let first = Self.transfer("https://h2.test/1")
        queue.enqueue(first)
        #expect(Self.drain(&queue).count == 1)
        queue.release(first, httpVersion: 2)
        #expect(queue.origins.isEmpty)
        // One at a time to the same origin: back in the list, one connection's worth per transfer.
        let next = (2..<4).map { Self.transfer("https://h2.test/\($0)") }
        for transfer in next { queue.enqueue(transfer) }
        #expect(queue.origins.count == 1)
        #expect(Self.drain(&queue).count == 1)
        queue.release(next[0], httpVersion: 1)
        #expect(Self.drain(&queue).count == 1)
        queue.release(next[1], httpVersion: 1)
        #expect(queue.origins.isEmpty)
    }

    @Test("under a total limit, the oldest waiting transfer goes first whatever its origin")
    func totalLimitKeepsArrivalOrder() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 4, total: 1))
        let order = ["http://a.test/1", "http://b.test/1", "http://a.test/2", "http://c.test/1"].map {
            Self.transfer($0)
        }
        for transfer in order { queue.enqueue(transfer) }
        var admitted: [Transfer] = []
        for _ in order {
            let batch = Self.drain(&queue)
            #expect(batch.count == 1)
            admitted += batch
            queue.release(batch[0], httpVersion: 1)
        }
        #expect(admitted.map(ObjectIdentifier.init) == order.map(ObjectIdentifier.init))
        #expect(queue.origins.isEmpty)
    }

    @Test("an origin that answered over HTTP/2 admits a stream per transfer, not a connection")
    func multiplexingLearned() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        let transfers = (0..<5).map { Self.transfer("https://h2.test/\($0)") }
        for transfer in transfers { queue.enqueue(transfer) }
        #expect(Self.drain(&queue).count == 1)
        queue.release(transfers[0], httpVersion: 2)
        #expect(Self.drain(&queue).count == 4)
        #expect(queue.isEmpty)
    }

    @Test("prior knowledge of HTTP/2 multiplexes from the first transfer, up to 100 streams a connection")
    func priorKnowledgeMultiplexes() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        for index in 0..<150 { queue.enqueue(Self.transfer("https://h2.test/\(index)", http2: true)) }
        #expect(Self.drain(&queue).count == AdmissionQueue.unitsPerConnection)
        #expect(queue.count == 50)
    }

    @Test("cleartext prior knowledge weighs as HTTP/1.1 where each such transfer needs its own connection")
    func cleartextPriorKnowledgeOnOldCurl() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        let transfers = (0..<3).map { Self.transfer("http://h2c.test/\($0)", http2: true) }
        for transfer in transfers { queue.enqueue(transfer) }
        let multiplexes = CurlFeatures.current.reusesCleartextHTTP2Connections
        #expect(transfers[0].needsFreshConnection == !multiplexes)
        #expect(Self.drain(&queue).count == (multiplexes ? 3 : 1))
        // An answer over HTTP/2 teaches nothing either: the next transfer still has the origin alone.
        queue.release(transfers[0], httpVersion: 2)
        #expect(Self.drain(&queue).count == (multiplexes ? 0 : 1))
    }

    @Test("a forgotten (cancelled) transfer leaves the count at once and is never admitted")
    func forgottenIsSkipped() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 1))
        let transfers = (0..<3).map { Self.transfer("http://a.test/\($0)") }
        for transfer in transfers { queue.enqueue(transfer) }
        #expect(Self.drain(&queue).count == 1)
        queue.forget(transfers[1])
        #expect(queue.count == 1)
        queue.release(transfers[0], httpVersion: 1)
        #expect(Self.drain(&queue).map(ObjectIdentifier.init) == [ObjectIdentifier(transfers[2])])
        #expect(queue.removeAll().isEmpty)
    }

    @Test("without limits nothing waits")
    func unlimited() {
        var queue = AdmissionQueue(limits: Self.limits(perHost: 0))
        for index in 0..<500 { queue.enqueue(Self.transfer("http://a.test/\(index)")) }
        #expect(Self.drain(&queue).count == 500)
    }

    // MARK: random sequences against a model

    /// The queue as a reader of its doc would model it: per origin, the running units and the
    /// waiting transfers in arrival order; what it has learned about multiplexing, forgotten
    /// when the origin goes idle; the oldest head that fits goes first.
    struct Model {
        let perHost: Int?
        let total: Int?
        var waiting: [String: [Transfer]] = [:]
        var running: [String: Int] = [:]
        var multiplexes: [String: Bool] = [:]
        var held: [ObjectIdentifier: (origin: String, units: Int)] = [:]
        var sequence: [ObjectIdentifier: Int] = [:]
        var arrivals = 0

        func isIdle(_ origin: String) -> Bool { (running[origin] ?? 0) == 0 && (waiting[origin] ?? []).isEmpty }
        func weight(_ origin: String) -> Int { multiplexes[origin] == true ? 1 : AdmissionQueue.unitsPerConnection }
        var units: Int { running.values.reduce(0, +) }

        mutating func enqueue(_ transfer: Transfer, http2: Bool) {
            let origin = transfer.request.originKey
            if isIdle(origin) { multiplexes[origin] = http2 && !transfer.needsFreshConnection }
            waiting[origin, default: []].append(transfer)
            arrivals += 1
            sequence[ObjectIdentifier(transfer)] = arrivals
        }

        /// The transfer `next()` should admit: the oldest head among origins with room under
        /// their own limit, provided the total has room for it.
        mutating func next() -> Transfer? {
            let candidates = waiting.compactMap { origin, line -> (String, Transfer)? in
                guard let head = line.first else { return nil }
                if let perHost, (running[origin] ?? 0) + weight(origin) > perHost { return nil }
                return (origin, head)
            }
            guard
                let (origin, head) = candidates.min(by: {
                    sequence[ObjectIdentifier($0.1)]! < sequence[ObjectIdentifier($1.1)]!
                })
            else { return nil }
            let units = weight(origin)
            if let total, self.units + units > total { return nil }
            waiting[origin]?.removeFirst()
            running[origin, default: 0] += units
            held[ObjectIdentifier(head)] = (origin, units)
            return head
        }

        mutating func release(_ transfer: Transfer, httpVersion: Int?) {
            guard let (origin, units) = held.removeValue(forKey: ObjectIdentifier(transfer)) else { return }
            running[origin, default: 0] -= units
            if let httpVersion, httpVersion >= 2, !transfer.needsFreshConnection { multiplexes[origin] = true }
        }

        mutating func forget(_ transfer: Transfer) {
            let origin = transfer.request.originKey
            waiting[origin]?.removeAll { $0 === transfer }
        }

        var allWaiting: [Transfer] {
            waiting.values.joined().sorted { sequence[ObjectIdentifier($0)]! < sequence[ObjectIdentifier($1)]! }
        }
    }

    static func simulate(seed: UInt64, steps: Int) {
        var random = SeededGenerator(seed: seed)
        let perHost = Int.random(in: 0...2, using: &random)
        let totalConnections = [0, 1, 2, 3].randomElement(using: &random)!
        var queue = AdmissionQueue(limits: Self.limits(perHost: perHost, total: totalConnections))
        var model = Model(perHost: queue.perHost, total: queue.total)
        let origins = ["http://a.test", "http://b.test", "https://c.test"]
        var running: [Transfer] = []
        var outcomes: [ObjectIdentifier: Int] = [:]  // admitted, forgotten, expired or removed: once each
        var issued = 0
        var isShutDown = false
        var everyTransfer: [Transfer] = []  // alive to the end: identities are not reused

        func ended(_ transfer: Transfer, _ event: String) {
            outcomes[ObjectIdentifier(transfer), default: 0] += 1
            #expect(outcomes[ObjectIdentifier(transfer)] == 1, "seed \(seed): a transfer \(event) twice")
        }
        func check(_ step: String) {
            let violations = queue.invariantViolations()
            #expect(violations.isEmpty, "seed \(seed), after \(step): \(violations)")
            #expect(queue.count == model.allWaiting.count, "seed \(seed), after \(step): count")
            for origin in origins {
                #expect(
                    (queue.origins[origin]?.units ?? 0) == (model.running[origin] ?? 0),
                    "seed \(seed), \(origin): units")
            }
        }
        func admit() {
            while true {
                let expected = model.next()
                let admitted = queue.next()
                #expect(admitted === expected, "seed \(seed): admitted out of order, or not what fits")
                guard let admitted else { return }
                ended(admitted, "admitted")
                running.append(admitted)
            }
        }

        for _ in 0..<steps {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40 where !isShutDown:
                issued += 1
                let http2 = random.chance(0.2)
                let transfer = Self.transfer("\(origins.randomElement(using: &random)!)/\(issued)", http2: http2)
                everyTransfer.append(transfer)
                queue.enqueue(transfer)
                model.enqueue(transfer, http2: http2)
                check("enqueue")
                admit()
                check("admission")
            case 40..<70:
                guard !running.isEmpty else { continue }
                let transfer = running.remove(at: Int.random(in: 0..<running.count, using: &random))
                let version = [nil, 1, 2].randomElement(using: &random)!
                queue.release(transfer, httpVersion: version)
                model.release(transfer, httpVersion: version)
                check("release")
                admit()
                check("admission")
            case 70..<85:
                guard let transfer = model.allWaiting.randomElement(using: &random) else { continue }
                queue.forget(transfer)
                queue.forget(transfer)  // a second cancellation changes nothing
                model.forget(transfer)
                ended(transfer, "forgotten")
                check("forget")
                admit()
            case 85..<97:
                let doomed = Set(model.allWaiting.filter { _ in random.chance(0.3) }.map(ObjectIdentifier.init))
                let expired = queue.removeExpired { doomed.contains(ObjectIdentifier($0)) }
                #expect(Set(expired.map(ObjectIdentifier.init)) == doomed, "seed \(seed): expired the wrong transfers")
                for transfer in expired {
                    model.forget(transfer)
                    ended(transfer, "expired")
                }
                check("removeExpired")
                admit()
            default:
                guard random.chance(0.2), !isShutDown else { continue }
                let removed = queue.removeAll().map(\.transfer)
                #expect(
                    removed.map(ObjectIdentifier.init) == model.allWaiting.map(ObjectIdentifier.init),
                    "seed \(seed): shutdown order")
                for transfer in removed {
                    model.forget(transfer)
                    ended(transfer, "removed")
                }
                isShutDown = true
                check("removeAll")
            }
        }
        // Drain: what runs ends, and what waits is admitted as room comes.
        while let transfer = running.popLast() {
            queue.release(transfer, httpVersion: 1)
            model.release(transfer, httpVersion: 1)
            admit()
            check("the drain")
        }
        #expect(queue.isEmpty && queue.origins.isEmpty, "seed \(seed): the drained queue kept something")
        #expect(
            outcomes.count == issued && outcomes.values.allSatisfy { $0 == 1 },
            "seed \(seed): a transfer without one outcome")
        withExtendedLifetime(everyTransfer) {}
    }

    @Test(
        "random event sequences: limits kept, arrival order kept, each transfer one outcome, nothing left",
        arguments: 0..<4)
    func randomSequencesKeepTheInvariants(batch: UInt64) {
        for seed in batch * 300..<(batch + 1) * 300 { Self.simulate(seed: seed, steps: 120) }
    }
}
