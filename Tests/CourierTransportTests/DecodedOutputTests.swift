import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

/// How `decodeAll` sizes its buffer: from the size a body declares (a zstd frame's content
/// size, a gzip member's `ISIZE`), believed within bounds, so that a body whose declared size
/// is true is written once, into a buffer that never grows (see PERFORMANCE.md).
@Suite struct DecodedOutputTests {
    @Test func theFirstBufferHoldsTheDeclaredSizeAndOneByte() {
        // One byte more than declared: a body of exactly that size fills it without growing.
        #expect(DecodedOutput.firstCapacity(inputCount: 15_000, declaredSize: 120_000, limit: nil) == 120_001)
        // Without a declared size: sixteen times the input, at least 16 KiB.
        #expect(DecodedOutput.firstCapacity(inputCount: 15_000, declaredSize: nil, limit: nil) == 240_000)
        #expect(DecodedOutput.firstCapacity(inputCount: 100, declaredSize: nil, limit: nil) == 16 << 10)
        #expect(DecodedOutput.firstCapacity(inputCount: 100, declaredSize: 0, limit: nil) == 16 << 10)
    }

    @Test func aDeclaredSizeIsBelievedOnlyWithinBounds() {
        // A body's word for its size is believed up to 256 times its compressed size...
        #expect(DecodedOutput.firstCapacity(inputCount: 1_000, declaredSize: 1 << 40, limit: nil) == 256_001)
        // ...and never past the caller's limit (one byte over it, to tell "too large" apart).
        #expect(DecodedOutput.firstCapacity(inputCount: 15_000, declaredSize: 120_000, limit: 50_000) == 50_001)
        #expect(DecodedOutput.firstCapacity(inputCount: 15_000, declaredSize: nil, limit: 1_000) == 1_001)
    }

    @Test func zstdAndGzipBodiesDeclareTheirSizeAndDeflateDoesNot() throws {
        let text = Payloads.text(count: 120_000)
        let zstd = Compression.zstd(text, level: 3)
        let gzip = Compression.compress(text, format: .gzip)
        zstd.withUnsafeBytes { #expect(ZstdDecoder().declaredSize(of: $0) == 120_000) }
        gzip.withUnsafeBytes { #expect(Inflater(encoding: .gzip).declaredSize(of: $0) == 120_000) }
        Compression.compress(text, format: .zlib).withUnsafeBytes {
            #expect(Inflater(encoding: .deflate).declaredSize(of: $0) == nil)
        }
        // A skippable frame first declares 0: no hint.
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 0x01, 0x00, 0x00, 0x00, 0xAA] + zstd
        skippable.withUnsafeBytes { #expect(ZstdDecoder().declaredSize(of: $0) == nil) }
        // A declaration is a hint only: two gzip members declare the last one's size (ISIZE),
        // and the body decodes to both.
        let twoMembers = gzip + Compression.compress(Array(text[..<100]), format: .gzip)
        twoMembers.withUnsafeBytes { #expect(Inflater(encoding: .gzip).declaredSize(of: $0) == 100) }
        let decoded = try twoMembers.withUnsafeBytes { try Inflater(encoding: .gzip).decodeAll($0, limit: nil) }
        #expect(Array(decoded) == text + text[..<100])
    }

    /// `decodeAll` hands the decoder the declared size's buffer at once.
    @Test func decodeAllFillsOneBufferOfTheDeclaredSize() throws {
        let decoder = SpyDecoder(declared: 300_000, produces: 300_000)
        let decoded = try [UInt8](repeating: 1, count: 2_000).withUnsafeBytes {
            try decoder.decodeAll($0, limit: nil)
        }
        #expect(decoded.count == 300_000)
        // At least the declared size and a byte (mapped buffers are whole pages).
        #expect((300_001..<300_001 + 4_096).contains(decoder.spaces.first ?? 0))
        #expect(decoder.spaces.count == 1, "the buffer grew: \(decoder.spaces)")
        // Without a declaration, the buffer starts at sixteen times the input and doubles.
        let guessing = SpyDecoder(declared: nil, produces: 300_000)
        _ = try [UInt8](repeating: 1, count: 2_000).withUnsafeBytes { try guessing.decodeAll($0, limit: nil) }
        #expect(guessing.spaces.count > 1)
    }

    /// A body that declares no size, compressed as JSON usually is (here 12 times), is written
    /// into the first buffer, with no copy as it grows.
    @Test func anUndeclaredBodyOfTypicalRatioFillsTheFirstBuffer() throws {
        let decoder = SpyDecoder(declared: nil, produces: 24_000)
        let decoded = try [UInt8](repeating: 1, count: 2_000).withUnsafeBytes {
            try decoder.decodeAll($0, limit: nil)
        }
        #expect(decoded.count == 24_000)
        #expect(decoder.spaces == [32_000], "the buffer grew: \(decoder.spaces)")
    }

    /// What a heap block did not fill is given back; a nearly full block and a mapped one
    /// (whose unwritten pages hold no memory) are kept as they are.
    @Test func trimGivesBackWhatAHeapBlockDidNotFill() {
        var (pointer, capacity) = LargeBuffer.allocate(200_000)
        pointer.initializeMemory(as: UInt8.self, repeating: 9, count: 20_000)
        (pointer, capacity) = LargeBuffer.trim(pointer, capacity: capacity, to: 20_000)
        #expect(capacity == 20_000)
        #expect(mallocUsableSize(pointer) < 30_000)
        #expect(UnsafeRawBufferPointer(start: pointer, count: 20_000).allSatisfy { $0 == 9 })
        LargeBuffer.deallocate(pointer, capacity: capacity)

        let (full, fullCapacity) = LargeBuffer.allocate(100_000)
        #expect(LargeBuffer.trim(full, capacity: fullCapacity, to: 95_000) == (full, 100_000))
        LargeBuffer.deallocate(full, capacity: fullCapacity)

        let (mapped, mappedCapacity) = LargeBuffer.allocate(1 << 20)
        #expect(LargeBuffer.trim(mapped, capacity: mappedCapacity, to: 1_000) == (mapped, mappedCapacity))
        LargeBuffer.deallocate(mapped, capacity: mappedCapacity)
    }

    /// Growing keeps the bytes written, from heap to heap (`realloc`), heap to mapped pages and
    /// mapped to mapped.
    @Test func growKeepsWhatWasWritten() {
        var (pointer, capacity) = LargeBuffer.allocate(16 << 10)
        var used = 0
        for (step, size) in [64 << 10, 200 << 10, 1 << 20, 4 << 20].enumerated() {
            (pointer + used).initializeMemory(as: UInt8.self, repeating: UInt8(step + 1), count: capacity - used)
            used = capacity
            (pointer, capacity) = LargeBuffer.grow(pointer, capacity: capacity, used: used, to: size)
            #expect(capacity >= size)
        }
        let written = UnsafeRawBufferPointer(start: pointer, count: used)
        #expect(used == 1 << 20)
        for (byte, range) in [
            (1, 0..<(16 << 10)), (2, (16 << 10)..<(64 << 10)), (3, (64 << 10)..<(200 << 10)), (4, (200 << 10)..<used),
        ] {
            #expect(written[range].allSatisfy { $0 == UInt8(byte) }, "bytes \(range)")
        }
        LargeBuffer.deallocate(pointer, capacity: capacity)
    }
}

/// glibc's `malloc_usable_size` (declared in `malloc.h`, which the Glibc module leaves out): the
/// bytes a heap block really spans.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int

/// A decoder that writes `produces` bytes into whatever space it is given, and records the
/// size of each space it was handed.
private final class SpyDecoder: SpaceFillingDecoder {
    let declared: Int?
    let produces: Int
    var spaces: [Int] = []
    private(set) var totalOut = 0

    init(declared: Int?, produces: Int) {
        self.declared = declared
        self.produces = produces
    }

    func declaredSize(of input: UnsafeRawBufferPointer) -> Int? { declared }

    func fill(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError) {
        var space = try nextSpace(0)
        while totalOut < produces {
            spaces.append(space.count)
            let count = min(space.count, produces - totalOut)
            space.baseAddress!.initializeMemory(as: UInt8.self, repeating: 7, count: count)
            totalOut += count
            space = try nextSpace(count)
        }
    }

    func finish() throws(ServiceError) {}
}
