import FoundationEssentials
import FuzzSupport

// What the content-decoder fuzz targets (FuzzInflate, FuzzBrotli, FuzzZstd) share: one body
// that runs a decoder both ways on the same stream.
//
// Input: one control byte, then the compressed stream. Control bit 0: for FuzzInflate, gzip (0)
// or deflate (1, zlib-wrapped or raw, told apart by the inflater); bits 1-3: the chunk size of
// the streaming path; bits 4-5: the output limit. Both paths run on the same stream:
// `decodeAll` and `decode` chunk by chunk then `finish()`.
//
// Invariants beyond "no crash": when both accept the stream they produce the same bytes; no
// accepted output exceeds the limit; a refused stream is `decompressionFailed` or
// `responseTooLarge`, never another code.
@testable import CourierTransport

/// The decoder a fuzz target exercises.
public enum FuzzedDecoder {
    /// zlib's: gzip or deflate, chosen by the control byte's bit 0.
    case gzipOrDeflate
    case brotli
    case zstd
}

let chunkSizes = [1, 2, 3, 7, 16, 64, 512, 4096]
let limits: [Int?] = [nil, 1 << 20, 4096, 10]

func expectDecodeError(_ error: ServiceError, _ path: String) {
    check(
        error.code == .decompressionFailed || error.code == .responseTooLarge,
        "\(path) failed with \(error.code): \(error.message)")
}

func decodeWhole(_ stream: UnsafeRawBufferPointer, encoding: ContentEncoding, limit: Int?) -> Data? {
    let decoder = encoding.makeDecoder()
    do throws(ServiceError) {
        let data = try decoder.decodeAll(stream, limit: limit)
        check(decoder.totalOut == data.count, "decodeAll's totalOut is not its output size")
        return data
    } catch {
        expectDecodeError(error, "decodeAll")
        return nil
    }
}

func decodeChunked(_ stream: UnsafeRawBufferPointer, encoding: ContentEncoding, limit: Int?, chunk: Int) -> Data? {
    let decoder = encoding.makeDecoder()
    var output = Data()
    do throws(ServiceError) {
        var offset = 0
        while offset < stream.count {
            let end = min(offset + chunk, stream.count)
            try decoder.decode(UnsafeRawBufferPointer(rebasing: stream[offset..<end]), limit: limit) {
                (piece: UnsafeRawBufferPointer) throws(ServiceError) in
                output.append(contentsOf: piece)
            }
            offset = end
        }
        try decoder.finish()
        check(decoder.totalOut == output.count, "the chunked totalOut is not its output size")
        return output
    } catch {
        expectDecodeError(error, "chunked decode")
        return nil
    }
}

/// Runs one fuzz input (control byte, then stream) through `decoder` both ways.
public func fuzzDecoder(_ start: UnsafeRawPointer, _ count: Int, _ decoder: FuzzedDecoder) {
    guard count > 0 else { return }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let control = Int(bytes[0])
    let encoding: ContentEncoding =
        switch decoder {
        case .gzipOrDeflate: control & 1 == 0 ? .gzip : .deflate
        case .brotli: .brotli
        case .zstd: .zstd
        }
    let chunk = chunkSizes[(control >> 1) & 7]
    let limit = limits[(control >> 4) & 3]
    let stream = UnsafeRawBufferPointer(rebasing: bytes[1...])

    let whole = decodeWhole(stream, encoding: encoding, limit: limit)
    let chunked = decodeChunked(stream, encoding: encoding, limit: limit, chunk: chunk)
    if let limit {
        check((whole?.count ?? 0) <= limit && (chunked?.count ?? 0) <= limit, "output past the limit")
    }
    if let whole, let chunked {
        check(whole == chunked, "decodeAll and chunked decode disagree on the bytes")
    }
    check(
        (whole == nil) == (chunked == nil),
        "decodeAll \(whole == nil ? "refused" : "accepted") a stream that chunked decode (chunks of \(chunk)) "
            + "\(chunked == nil ? "refused" : "accepted")")
}
