import CourierTestServer
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

@testable import CourierOpenAPI

/// `RequestSpool` alone: where the threshold falls, and which executor spools.
@Suite("Request spool")
struct RequestSpoolInternalsTests {
    @Test("the threshold is inclusive: that many bytes stay in memory, one more goes to a file")
    func thresholdBoundary() async throws {
        let spool = try SpoolDirectory()
        defer { spool.delete() }
        let threshold = 1 << 20
        for length in [HTTPBody.Length.unknown, .known(Int64(threshold))] {
            let atThreshold = try await RequestSpool.make(
                from: PatternChunks.body(count: threshold, length: length), threshold: threshold, limit: 64 << 20,
                directory: spool.url)
            #expect(atThreshold.path == nil)
            #expect(atThreshold.body?.inMemoryBytes?.count == threshold)
        }
        for length in [HTTPBody.Length.unknown, .known(Int64(threshold + 1))] {
            let past = try await RequestSpool.make(
                from: PatternChunks.body(count: threshold + 1, length: length), threshold: threshold, limit: 64 << 20,
                directory: spool.url)
            let path = try #require(past.path)
            #expect(past.body?.inMemoryBytes == nil)
            let written = try Data(contentsOf: URL(filePath: path))
            #expect(written.count == threshold + 1 && Payloads.isPattern(written))
            past.remove()
            #expect(spool.files().isEmpty)
        }
    }

    @Test("past the threshold, the body is read and written off the cooperative pool")
    func spoolingRunsOffThePool() async throws {
        let spool = try SpoolDirectory()
        defer { spool.delete() }
        let chunks = ExecutorRecordingChunks(count: 32)
        let body = HTTPBody(chunks, length: .unknown, iterationBehavior: .single)
        let spooled = try await RequestSpool.make(from: body, threshold: 1 << 20, limit: 64 << 20, directory: spool.url)
        defer { spooled.remove() }
        #expect(spooled.path != nil)
        // 16 chunks of 64 KiB fill the 1 MiB threshold in memory; the 17th crosses it. Every
        // later chunk is made, and written, on the spool executor.
        let expected = Array(repeating: false, count: 17) + Array(repeating: true, count: 15)
        #expect(chunks.onSpoolExecutor.withLock { $0 } == expected)
    }
}
