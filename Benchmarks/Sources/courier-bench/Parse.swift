import CRawCurl
import Courier
@_spi(Benchmarks) import CourierTransport
import Foundation

/// A resource decoding the medium payload: Courier's decode path (the default `decode` of a
/// `Decodable` response).
struct RecordsResource: Resource {
    typealias Response = [Payloads.Record]
    var endpoint: Endpoint { Endpoint("http://127.0.0.1", path: "/medium.json") }
    var jsonDecoder: any JSONBodyDecoder {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

struct PlainRecordsResource: Resource {
    typealias Response = [Payloads.PlainRecord]
    var endpoint: Endpoint { Endpoint("http://127.0.0.1", path: "/medium.json") }
}

/// MB/s decoding the medium payload into models, Courier's path (`CourierJSONDecoder`, the
/// default of `Resource`) against Foundation's `JSONDecoder` on the same bytes; and content
/// decoding (gzip, brotli, zstd), Courier's streaming decoders against each library's one-shot call.
func parse(report: Report, quick: Bool, runs: Int) throws {
    report.section("Parse: MB/s on the \(Payloads.medium.count / 1000) KB payload (median of \(runs))")
    let body = Payloads.medium
    let head = HTTPResponse(status: .ok)
    let iterations = quick ? 20 : 100
    let megabytes = Double(body.count * iterations) / 1e6

    func once(_ operation: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        for _ in 0..<iterations { try operation() }
        return megabytes / (ContinuousClock.now - start).seconds
    }

    /// Runs alternate between the two decoders, so that a slow stretch of the machine is shared.
    func measure(_ reference: () throws -> Void, _ candidate: () throws -> Void) rethrows -> (
        reference: [Double], candidate: [Double]
    ) {
        var results: ([Double], [Double]) = ([], [])
        for _ in 0..<runs {
            results.0.append(try once(reference))
            results.1.append(try once(candidate))
        }
        return results
    }

    progress("parse: plain records")
    let (plainFoundation, plainCourier) = try measure(
        { _ = try JSONDecoder().decode([Payloads.PlainRecord].self, from: body) },
        { _ = try PlainRecordsResource().decode(body, response: head) })
    let plainReference = report.add("parse plain", "Foundation JSONDecoder", unit: "MB/s", samples: plainFoundation)
    report.add("parse plain", "Courier decode path", unit: "MB/s", samples: plainCourier, reference: plainReference)

    progress("parse: records with dates and snake_case")
    let foundationDecoder = JSONDecoder()
    foundationDecoder.keyDecodingStrategy = .convertFromSnakeCase
    foundationDecoder.dateDecodingStrategy = .iso8601
    let (datedFoundation, datedCourier) = try measure(
        { _ = try foundationDecoder.decode([Payloads.Record].self, from: body) },
        { _ = try RecordsResource().decode(body, response: head) })
    let datedReference = report.add(
        "parse dates+snake", "Foundation JSONDecoder", unit: "MB/s", samples: datedFoundation)
    report.add(
        "parse dates+snake", "Courier decode path", unit: "MB/s", samples: datedCourier, reference: datedReference)
}

/// MB/s of content decoding (gzip, brotli, zstd) of the medium payload: each library's one call
/// over the whole buffer against Courier's streaming decoder fed 16 KiB pieces (as a transfer
/// delivers them, for streamed bodies) and Courier's whole-body decoding (as `load()` decodes a
/// body it holds whole).
func decoding(report: Report, quick: Bool, runs: Int) throws {
    let body = Payloads.medium
    report.section("Decode: MB/s on the \(body.count / 1000) KB payload (median of \(runs))")
    progress("decode")
    let iterations = quick ? 200 : 2_000
    let codings:
        [(row: String, library: String, format: StreamingDecoder.Format, compressed: Data, oneShot: RawCodec)] =
            [
                (
                    "inflate gzip", "zlib one-shot (C)", .gzip, try rawCompressed(body, raw_compress_gzip),
                    raw_inflate_gzip
                ),
                (
                    "decode br", "libbrotlidec one-shot (C)", .brotli, try rawCompressed(body, raw_compress_brotli),
                    raw_decompress_brotli
                ),
                (
                    "decode zstd", "libzstd one-shot (C)", .zstd, try rawCompressed(body, raw_compress_zstd),
                    raw_decompress_zstd
                ),
            ]
    for coding in codings {
        let measured = try measureDecoding(
            body: body, compressed: coding.compressed, format: coding.format, oneShot: coding.oneShot,
            iterations: iterations, runs: runs)
        let library = report.add(coding.row, coding.library, unit: "MB/s", samples: measured.oneShot)
        report.add(coding.row, "Courier, 16 KiB pieces", unit: "MB/s", samples: measured.streaming, reference: library)
        report.add(coding.row, "Courier, whole body", unit: "MB/s", samples: measured.whole, reference: library)
    }
}

/// A C one-shot codec: input, its length, output, its capacity; the bytes produced or -1.
typealias RawCodec = @convention(c) (UnsafeRawPointer?, Int64, UnsafeMutableRawPointer?, Int64) -> Int64

/// `data` compressed by a C one-shot compressor.
func rawCompressed(_ data: Data, _ compress: RawCodec) throws -> Data {
    var output = [UInt8](repeating: 0, count: data.count + data.count / 2 + 1024)
    let produced = data.withUnsafeBytes { input in
        output.withUnsafeMutableBytes {
            compress(input.baseAddress, Int64(input.count), $0.baseAddress, Int64($0.count))
        }
    }
    guard produced > 0 else { throw BenchError("compressing the decode payload failed") }
    return Data(output[..<Int(produced)])
}

/// MB/s of decoding `compressed` back into `body`: the library's one call over the whole
/// buffer, Courier's streaming decoder fed 16 KiB pieces, and Courier's whole-body decoding;
/// `runs` samples of each, taken in turn so that a slow stretch of the machine is shared.
func measureDecoding(
    body: Data, compressed: Data, format: StreamingDecoder.Format, oneShot: RawCodec, iterations: Int, runs: Int
) throws -> (oneShot: [Double], streaming: [Double], whole: [Double]) {
    let megabytes = Double(body.count * iterations) / 1e6
    var output = [UInt8](repeating: 0, count: body.count + 1024)
    func timed(_ operation: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        for _ in 0..<iterations { try operation() }
        return megabytes / (ContinuousClock.now - start).seconds
    }
    var samples: (oneShot: [Double], streaming: [Double], whole: [Double]) = ([], [], [])
    for _ in 0..<runs {
        samples.oneShot.append(
            timed {
                let produced = compressed.withUnsafeBytes { input in
                    output.withUnsafeMutableBytes {
                        oneShot(input.baseAddress, Int64(input.count), $0.baseAddress, Int64($0.count))
                    }
                }
                precondition(produced == body.count)
            })
        samples.streaming.append(
            try timed {
                let decoder = StreamingDecoder(format: format)
                var result = Data()
                result.reserveCapacity(body.count)
                var offset = 0
                while offset < compressed.count {
                    let end = min(offset + 16_384, compressed.count)
                    try decoder.decode(compressed.subdata(in: offset..<end), into: &result)
                    offset = end
                }
                try decoder.finish()
                precondition(result.count == body.count)
            })
        samples.whole.append(
            try timed {
                let result = try StreamingDecoder.decodeWhole(compressed, format: format)
                precondition(result.count == body.count)
            })
    }
    return samples
}
