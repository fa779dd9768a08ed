import CourierCore
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
        let order = ["http://a.test/1", "http://b.test/1", "http://a.test/2", "http://c.test/1"].map { Self.transfer($0) }
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
        for index in 0..<150 { queue.enqueue(Self.transfer("http://h2c.test/\(index)", http2: true)) }
        #expect(Self.drain(&queue).count == AdmissionQueue.unitsPerConnection)
        #expect(queue.count == 50)
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
}
