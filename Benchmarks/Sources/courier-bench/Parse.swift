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

    // Decode: 16 KiB pieces, as a transfer delivers them, against each library's one call over
    // the whole buffer (zlib, libbrotlidec, libzstd).
    progress("decode")
    let decodeIterations = quick ? 200 : 2_000
    let gzip = try gzipped(body)
    let codings:
        [(row: String, library: String, format: StreamingDecoder.Format, compressed: Data, oneShot: RawCodec)] =
            [
                ("inflate gzip", "zlib one-shot (C)", .gzip, gzip, raw_inflate_gzip),
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
        let (oneShot, streaming) = try measureDecoding(
            body: body, compressed: coding.compressed, format: coding.format, oneShot: coding.oneShot,
            iterations: decodeIterations, runs: runs)
        let library = report.add(coding.row, coding.library, unit: "MB/s", samples: oneShot)
        report.add(coding.row, "Courier StreamingDecoder", unit: "MB/s", samples: streaming, reference: library)
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
/// buffer, and Courier's streaming decoder fed 16 KiB pieces; `runs` samples of each.
func measureDecoding(
    body: Data, compressed: Data, format: StreamingDecoder.Format, oneShot: RawCodec, iterations: Int, runs: Int
) throws -> (oneShot: [Double], streaming: [Double]) {
    let megabytes = Double(body.count * iterations) / 1e6
    var output = [UInt8](repeating: 0, count: body.count + 1024)
    let whole: [Double] = (0..<runs).map { _ in
        let start = ContinuousClock.now
        for _ in 0..<iterations {
            let produced = compressed.withUnsafeBytes { input in
                output.withUnsafeMutableBytes {
                    oneShot(input.baseAddress, Int64(input.count), $0.baseAddress, Int64($0.count))
                }
            }
            precondition(produced == body.count)
        }
        return megabytes / (ContinuousClock.now - start).seconds
    }
    let streaming: [Double] = try (0..<runs).map { _ in
        let start = ContinuousClock.now
        for _ in 0..<iterations {
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
        }
        return megabytes / (ContinuousClock.now - start).seconds
    }
    return (whole, streaming)
}

/// `data` compressed by the gzip command (as nginx's `.gz` files are).
func gzipped(_ data: Data) throws -> Data {
    let path = NSTemporaryDirectory() + "courier-bench-\(getpid()).json"
    let undo = [Cleanup.removes(path), Cleanup.removes(path + ".gz")]
    defer {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + ".gz")
        for token in undo { Cleanup.done(token) }
    }
    try data.write(to: URL(fileURLWithPath: path))
    try run("/bin/gzip", ["-9", "-f", path])
    return try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
}
