import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// After a burst of large bodies and a shutdown, a process holds about what it held before:
/// the body-buffer pool is bounded by bytes and emptied at shutdown, and large buffers go back
/// to the system when released. Measured in a child process, whose memory nothing else shares.
@Suite struct MemoryReleaseTests {
    struct Figures: Decodable {
        var baseline: Int
        var peak: Int
        var after: Int
        var received: Int
    }

    @Test(
        .disabled(
            if: SanitizerRun.isThreadSanitizer,
            "a memory probe: its figures mean nothing under ThreadSanitizer, and its load starves the other tests"))
    func residentMemoryReturnsNearItsBaselineAfterABurst() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let path = URL(fileURLWithPath: CommandLine.testProductsDirectory)
            .appendingPathComponent("courier-memory-probe").path
        let (status, data) = try await ChildProcess.run(path, [server.authority])
        #expect(status == 0)
        let figures = try JSONDecoder().decode(Figures.self, from: Data(data))
        let megabyte = 1 << 20
        print(
            "memory probe: baseline \(figures.baseline / megabyte) MB, peak \(figures.peak / megabyte) MB, after \(figures.after / megabyte) MB"
        )
        // The burst really held its bodies at once ...
        #expect(figures.received > 200 * megabyte)
        #expect(figures.peak - figures.baseline > 150 * megabyte)
        // ... and the process gave them back.
        #expect(
            figures.after - figures.baseline < 24 * megabyte, "kept \((figures.after - figures.baseline) / megabyte) MB"
        )
    }
}

@Suite struct BodyBufferPoolTests {
    @Test func thePoolKeepsAtMostItsCapacityInBytes() {
        let pool = BodyBufferPool(capacity: 1 << 20)
        let buffers = (0..<12).map { _ in pool.take(200 << 10) }
        for (pointer, capacity) in buffers { pool.give(pointer, capacity: capacity) }
        #expect(pool.keptBytes <= 1 << 20)
        #expect(pool.keptBytes >= 800 << 10)
        // A buffer larger than the pooled sizes is never kept.
        let (large, largeCapacity) = pool.take(8 << 20)
        let before = pool.keptBytes
        pool.give(large, capacity: largeCapacity)
        #expect(pool.keptBytes == before)
    }

    @Test func aDrainedPoolReleasesEverythingAndKeepsNothingMore() {
        let pool = BodyBufferPool(capacity: 4 << 20)
        let (first, firstCapacity) = pool.take(100 << 10)
        let (second, secondCapacity) = pool.take(100 << 10)
        pool.give(first, capacity: firstCapacity)
        #expect(pool.keptBytes == firstCapacity)
        pool.drain()
        #expect(pool.keptBytes == 0)
        pool.give(second, capacity: secondCapacity)
        #expect(pool.keptBytes == 0)
    }

    @Test func reusedBuffersAreNoMoreThanTwiceTheSizeAsked() {
        let pool = BodyBufferPool(capacity: 4 << 20)
        let (pointer, capacity) = pool.take(600 << 10)
        pool.give(pointer, capacity: capacity)
        let (small, smallCapacity) = pool.take(100 << 10)
        #expect(small != pointer)
        #expect(smallCapacity < 200 << 10)
        let (again, againCapacity) = pool.take(400 << 10)
        #expect(again == pointer)
        pool.give(small, capacity: smallCapacity)
        pool.give(again, capacity: againCapacity)
    }
}
