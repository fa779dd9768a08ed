import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A 50 MB download through the coordinator, in a child process whose peak resident memory
/// the test reads: the body goes to disk without ever being held in memory.
@Suite("Download memory")
struct DownloadMemoryTests {
    struct Figures: Decodable {
        var baseline: Int
        var peak: Int
        var size: Int
        var sanitized: Bool
    }

    @Test(
        "a 50 MB download keeps the peak resident memory far below 50 MB above the baseline",
        .disabled(
            if: SanitizerRun.isThreadSanitizer,
            "a memory probe: its figures mean nothing under ThreadSanitizer, and its load starves the other tests"))
    func fiftyMegabytes() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("large.bin")
        let server = try await TestServer.start()
        let probe = URL(fileURLWithPath: CommandLine.testProductsDirectory)
            .appendingPathComponent("courier-download-probe").path
        let size = 50 << 20
        let (status, output) = try await ChildProcess.run(probe, [server.authority, "\(size)", path])
        await server.stop()
        #expect(status == 0)
        let figures = try JSONDecoder().decode(Figures.self, from: Data(output))
        let megabyte = 1 << 20
        print("download probe: baseline \(figures.baseline / megabyte) MB, peak \(figures.peak / megabyte) MB")
        #expect(figures.size == size)
        // A download held in memory would add at least the 50 MB body. Streamed, it adds about
        // 2 MB; AddressSanitizer's allocator (redzones, per-thread caches) adds about 20 MB more.
        let limit = (figures.sanitized ? 32 : 16) * megabyte
        #expect(figures.peak - figures.baseline < limit, "grew \((figures.peak - figures.baseline) / megabyte) MB")
        // Byte-exact, read back a megabyte at a time.
        let file = try #require(FileHandle(forReadingAtPath: path))
        defer { try? file.close() }
        var crc: UInt32 = 0
        var read = 0
        while let chunk = try file.read(upToCount: 1 << 20), !chunk.isEmpty {
            crc = chunk.withUnsafeBytes { Compression.crc32($0, continuing: crc) }
            read += chunk.count
        }
        #expect(read == size)
        #expect(crc == Payloads.patternCRC(count: size))
        #expect(directory.contents == ["large.bin"])
    }
}
