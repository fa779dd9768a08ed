import CourierTestServer
import Foundation
import Testing

/// `CourierCaching` (and `CourierCore` under it) must not pull libcurl or zlib: a cache store
/// or a test double links without them. `courier-cache-writer` is a program that depends on
/// `CourierCaching` alone; its dynamic section lists every library it needs.
@Suite("A curl-free core")
struct CurlFreeLinkTests {
    @Test("a program built on CourierCaching alone needs neither libcurl nor zlib")
    func cachingLinksWithoutCurl() async throws {
        let program = URL(fileURLWithPath: CommandLine.testProductsDirectory)
            .appendingPathComponent("courier-cache-writer").path
        #expect(FileManager.default.isExecutableFile(atPath: program))
        let (status, output) = try await ChildProcess.run("/usr/bin/readelf", ["--dynamic", "--wide", program])
        try #require(status == 0, "readelf failed on \(program)")
        let needed = String(decoding: output, as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("(NEEDED)") }
            .compactMap { line in line.split(separator: "[").last?.split(separator: "]").first.map(String.init) }
        #expect(needed.contains { $0.hasPrefix("libswiftCore") || $0.hasPrefix("libc.so") })
        #expect(!needed.contains { $0.hasPrefix("libcurl") }, "needs \(needed)")
        #expect(!needed.contains { $0.hasPrefix("libz.") }, "needs \(needed)")
    }
}
