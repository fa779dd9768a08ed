import CourierCore
import Foundation
import HTTPTypes
import Testing

@testable import CourierCaching

@Suite("DiskCache statuses")
struct DiskEntryStatusTests {
    @Test("a status round-trips as HTTPResponse.Status (the file keeps its code)")
    func roundTrip() async throws {
        try await withTemporaryDirectory { directory in
            var response = sampleResponse("gone")
            response.status = .notFound
            try await DiskCache(directory: directory).store(response, for: CacheKey("s"))
            let read = try #require(try await DiskCache(directory: directory).entry(for: CacheKey("s")))
            #expect(read.status == .notFound && read.status.code == 404 && read.head.status == .notFound)
        }
    }

    @Test("an intact file whose status code is past 999 is a miss and is removed, never a crash")
    func codeOutOfRange() async throws {
        try await withTemporaryDirectory { directory in
            let key = CacheKey("GET https://example.com/odd")
            try await DiskCache(directory: directory).store(sampleResponse("odd"), for: key)
            let path = "\(directory)/\(key.digest)"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            // The status follows the key (a u32 length, then its bytes) at the start of the metadata.
            let at = DiskEntryFile.prefixLength + 4 + key.rawValue.utf8.count
            #expect(bytes[at] == 200 && bytes[at + 1] == 0)
            bytes[at] = UInt8(1_000 & 0xff)
            bytes[at + 1] = UInt8(1_000 >> 8)
            // Checksums recomputed, as a writer that stored such a code would have.
            let metadataLength = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
            let range = DiskEntryFile.prefixLength..<(DiskEntryFile.prefixLength + metadataLength)
            let crc = DiskEntryFile.crc(Array(bytes[range]))
            for index in 0..<4 { bytes[12 + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try await DiskCache(directory: directory).entry(for: key) == nil)
            #expect(entryFiles(directory).isEmpty)
        }
    }
}
