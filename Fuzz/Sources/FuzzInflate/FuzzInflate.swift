import FoundationEssentials
import FuzzSupport

// libFuzzer target: the response-body inflater (gzip, zlib-wrapped deflate, raw deflate).
//
// Input: one control byte, then the compressed stream. Control bit 0: gzip (0) or deflate (1,
// zlib-wrapped or raw, told apart by the inflater); bits 1-3: the chunk size of the streaming
// path; bits 4-5: the output limit. Both paths run on the same stream: `inflateAll` and
// `inflate` chunk by chunk then `finish()`.
//
// Invariants beyond "no crash": when both accept the stream they produce the same bytes; no
// accepted output exceeds the limit; a refused stream is `decompressionFailed` or
// `responseTooLarge`, never another code.
@testable import CourierTransport

let chunkSizes = [1, 2, 3, 7, 16, 64, 512, 4096]
let limits: [Int?] = [nil, 1 << 20, 4096, 10]

func expectInflateError(_ error: ServiceError, _ path: String) {
    check(
        error.code == .decompressionFailed || error.code == .responseTooLarge,
        "\(path) failed with \(error.code): \(error.message)")
}

func inflateWhole(_ stream: UnsafeRawBufferPointer, encoding: ContentEncoding, limit: Int?) -> Data? {
    let inflater = Inflater(encoding: encoding)
    do throws(ServiceError) {
        let data = try inflater.inflateAll(stream, limit: limit)
        check(inflater.totalOut == data.count, "inflateAll's totalOut is not its output size")
        return data
    } catch {
        expectInflateError(error, "inflateAll")
        return nil
    }
}

func inflateChunked(_ stream: UnsafeRawBufferPointer, encoding: ContentEncoding, limit: Int?, chunk: Int) -> Data? {
    let inflater = Inflater(encoding: encoding)
    var output = Data()
    do throws(ServiceError) {
        var offset = 0
        while offset < stream.count {
            let end = min(offset + chunk, stream.count)
            try inflater.inflate(UnsafeRawBufferPointer(rebasing: stream[offset..<end]), limit: limit) {
                (piece: UnsafeRawBufferPointer) throws(ServiceError) in
                output.append(contentsOf: piece)
            }
            offset = end
        }
        try inflater.finish()
        check(inflater.totalOut == output.count, "the chunked totalOut is not its output size")
        return output
    } catch {
        expectInflateError(error, "chunked inflate")
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let control = Int(bytes[0])
    let encoding: ContentEncoding = control & 1 == 0 ? .gzip : .deflate
    let chunk = chunkSizes[(control >> 1) & 7]
    let limit = limits[(control >> 4) & 3]
    let stream = UnsafeRawBufferPointer(rebasing: bytes[1...])

    let whole = inflateWhole(stream, encoding: encoding, limit: limit)
    let chunked = inflateChunked(stream, encoding: encoding, limit: limit, chunk: chunk)
    if let limit {
        check((whole?.count ?? 0) <= limit && (chunked?.count ?? 0) <= limit, "output past the limit")
    }
    if let whole, let chunked {
        check(whole == chunked, "inflateAll and chunked inflate disagree on the bytes")
    }
    check(
        (whole == nil) == (chunked == nil),
        "inflateAll \(whole == nil ? "refused" : "accepted") a stream that chunked inflate (chunks of \(chunk)) "
            + "\(chunked == nil ? "refused" : "accepted")")
    return 0
}
