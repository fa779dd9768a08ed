import CourierTestServer
import Foundation
import Testing

/// A large upload through `CourierClientTransport` never sits whole in memory: measured in a
/// child process (`courier-upload-probe`), whose memory nothing else shares.
@Suite("Generated client, upload memory")
struct UploadMemoryTests {
    struct Figures: Decodable {
        var baseline: Int
        var peak: Int
        var status: Int
        var sanitized: Bool
    }

    @Test(
        "a 48 MB body of unknown length raises peak memory by a few MB, not by the body",
        .disabled(
            if: SanitizerRun.isThreadSanitizer,
            "a memory probe: its figures mean nothing under ThreadSanitizer, and its load starves the other tests"))
    func largeUploadIsSpooledNotHeld() async throws {
        let spool = try SpoolDirectory()
        defer { spool.delete() }
        let server = try await TestServer.start()
        let probe = URL(fileURLWithPath: CommandLine.testProductsDirectory)
            .appendingPathComponent("courier-upload-probe").path
        let size = 48 << 20
        let (status, output) = try await ChildProcess.run(probe, [server.authority, "\(size)", spool.url.path])
        let received = server.uploadAttempts("probe")
        await server.stop()
        #expect(status == 0)
        let figures = try JSONDecoder().decode(Figures.self, from: Data(output))
        let megabyte = 1 << 20
        print("upload probe: baseline \(figures.baseline / megabyte) MB, peak \(figures.peak / megabyte) MB")
        #expect(figures.status == 200)
        #expect(received == [UploadAttempt(bodyLength: size, bodyCRC: Payloads.patternCRC(count: size))])
        // Collected in memory, the body would add at least its 48 MB. Spooled, memory holds the
        // 1 MiB threshold plus a chunk; AddressSanitizer's allocator adds about 20 MB more.
        let limit = (figures.sanitized ? 32 : 16) * megabyte
        #expect(figures.peak - figures.baseline < limit, "grew \((figures.peak - figures.baseline) / megabyte) MB")
        #expect(spool.files().isEmpty)
    }
}
