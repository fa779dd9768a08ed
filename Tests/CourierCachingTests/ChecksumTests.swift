import CChecksum
import CourierTestServer
import Testing

@Suite("CRC-32C")
struct ChecksumTests {
    @Test("the standard check value, and the empty input")
    func checkValue() {
        let digits = Array("123456789".utf8)
        #expect(courier_crc32c(0, digits, digits.count) == 0xE306_9283)
        #expect(courier_crc32c_portable(0, digits, digits.count) == 0xE306_9283)
        #expect(courier_crc32c(0, digits, 0) == 0)
    }

    @Test("the CPU's instruction agrees with the table at every length and alignment, and in pieces")
    func instructionMatchesTable() {
        var generator = SeededGenerator(seed: 7)
        let bytes = (0..<4_096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { raw in
            for start in 0..<9 {
                for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1_000, 4_000] {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)])
                    let whole = courier_crc32c(0, slice.baseAddress, slice.count)
                    #expect(whole == courier_crc32c_portable(0, slice.baseAddress, slice.count))
                    // Continuing from a partial checksum gives the checksum of the whole.
                    let cut = length / 3
                    let head = courier_crc32c(0, slice.baseAddress, cut)
                    #expect(courier_crc32c(head, slice.baseAddress.map { $0 + cut }, length - cut) == whole)
                }
            }
        }
    }
}
