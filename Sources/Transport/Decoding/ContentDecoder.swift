internal import FoundationEssentials

/// One layer of content decoding: a stream that turns one coding's bytes back into what the
/// server encoded. Fed in one piece (``decodeAll(_:limit:)``) or chunk by chunk
/// (``decode(_:limit:output:)`` then ``finish()``). Every decoder shares the rules: more than
/// `limit` bytes out is `responseTooLarge`; corrupt input, data after the stream's end, or a
/// stream cut short is `decompressionFailed`, never a short body.
protocol ContentDecoder: AnyObject {
    /// Decodes `input`, handing each produced piece to `output`.
    func decode(
        _ input: UnsafeRawBufferPointer, limit: Int?, output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError)
    /// Decodes a whole body into one buffer, and checks that its stream ended.
    func decodeAll(_ input: UnsafeRawBufferPointer, limit: Int?) throws(ServiceError) -> Data
    /// Confirms that the stream reached its end (nothing fed is an empty body, and fine).
    func finish() throws(ServiceError)
    /// Bytes produced so far.
    var totalOut: Int { get }
}

/// A decoder whose work is one loop that fills output space as it is given (see
/// ``NextSpace``): chunked and whole decoding follow from that loop.
protocol SpaceFillingDecoder: ContentDecoder {
    /// Decodes `input` into the spaces `nextSpace` hands out.
    func fill(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError)
}

extension SpaceFillingDecoder {
    func decode(
        _ input: UnsafeRawBufferPointer, limit: Int?, output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        guard input.count > 0 else { return }
        let scratch = DecodedOutput.scratch()
        defer { scratch.deallocate() }
        try fill(input, limit: limit) { (filled: Int) throws(ServiceError) in
            if filled > 0 { try output(UnsafeRawBufferPointer(rebasing: scratch[..<filled])) }
            return scratch
        }
    }

    func decodeAll(_ input: UnsafeRawBufferPointer, limit: Int?) throws(ServiceError) -> Data {
        guard input.count > 0 else { return Data() }
        let data = try DecodedOutput.collect(inputCount: input.count, limit: limit) {
            (nextSpace) throws(ServiceError) in
            try fill(input, limit: limit, nextSpace: nextSpace)
        }
        try finish()
        return data
    }
}

extension ContentEncoding {
    /// A fresh decoder for this coding.
    func makeDecoder() -> any ContentDecoder {
        switch self {
        case .gzip, .deflate: Inflater(encoding: self)
        case .identity: preconditionFailure("identity needs no decoder")
        case .brotli: BrotliDecoder()
        case .zstd: ZstdDecoder()
        }
    }
}

/// How a decoder's loop asks for output space: `nextSpace(n)` is
/// told how many bytes were written into the space it returned last time (0 on the first call)
/// and returns the space to fill next.
typealias NextSpace = (Int) throws(ServiceError) -> UnsafeMutableRawBufferPointer

/// Output strategies shared by the decoders.
enum DecodedOutput {
    /// The scratch space a chunk is decoded into before it is handed on: 64 KiB.
    static func scratch() -> UnsafeMutableRawBufferPointer {
        .allocate(byteCount: 64 << 10, alignment: 16)
    }

    /// Runs `fill` with one buffer that doubles when full (from four times the input, at most
    /// one byte past `limit`), and returns what was written as `Data` that owns the buffer.
    static func collect(
        inputCount: Int, limit: Int?, _ fill: (NextSpace) throws(ServiceError) -> Void
    ) throws(ServiceError) -> Data {
        let ceiling = limit.map { $0 + 1 } ?? Int.max / 2
        var (buffer, capacity) = LargeBuffer.allocate(min(max(inputCount * 4, 16 << 10), ceiling))
        var used = 0
        do {
            try fill { (filled: Int) throws(ServiceError) in
                used += filled
                if used == capacity {
                    (buffer, capacity) = LargeBuffer.grow(
                        buffer, capacity: capacity, used: used, to: min(capacity * 2, ceiling))
                }
                return UnsafeMutableRawBufferPointer(start: buffer + used, count: capacity - used)
            }
        } catch {
            LargeBuffer.deallocate(buffer, capacity: capacity)
            throw error
        }
        let size = capacity
        return Data(
            bytesNoCopy: buffer, count: used,
            deallocator: .custom { pointer, _ in
                LargeBuffer.deallocate(pointer, capacity: size)
            })
    }

    /// The error for output past `limit`.
    static func tooLarge(_ limit: Int) -> ServiceError {
        ServiceError(.responseTooLarge, "The decoded body exceeds the limit of \(limit) bytes (decompression bomb?).")
    }

    /// The error for bytes after a stream that cannot be followed by another.
    static let trailingData = ServiceError(.decompressionFailed, "Data follows the end of the compressed stream.")

    /// The error for a stream cut short.
    static let truncated = ServiceError(
        .decompressionFailed, "The compressed body ended before its stream did (truncated).")
}
