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
    /// The decoded size `input`, a whole body, declares where its format carries one (a zstd
    /// frame's content size, a gzip member's `ISIZE`): a hint for sizing ``decodeAll(_:limit:)``'s
    /// buffer, never trusted as a fact.
    func declaredSize(of input: UnsafeRawBufferPointer) -> Int?
}

extension ContentDecoder {
    func declaredSize(of input: UnsafeRawBufferPointer) -> Int? { nil }
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
        let data = try DecodedOutput.collect(input, of: self, limit: limit) { (nextSpace) throws(ServiceError) in
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

    /// How far a body's declared size is believed: up to this many times its compressed size
    /// (JSON compresses 5 to 20 times; beyond, the buffer grows as it fills, as without one).
    static let declaredSizeTrust = 256

    /// How large a body that declares no size (brotli, deflate, some zstd frames) is guessed to
    /// be: 16 times its compressed size. Brotli compresses JSON documents 8.6 to 11.5 times (the
    /// median of 91 documents of 30 KB to 3 MB, at quality 4 to 11; 15 to 21 times at the 90th
    /// percentile), so most bodies fit the first buffer and are not copied as it grows;
    /// ``collect(_:of:limit:_:)`` trims what a body did not fill.
    static let undeclaredSizeGuess = 16

    /// The first buffer ``collect(_:of:limit:_:)`` fills: the declared size and one byte (an
    /// exact fit then needs no growing), within ``declaredSizeTrust`` times the input; without
    /// one, ``undeclaredSizeGuess`` times the input. At least 16 KiB, at most one byte past `limit`.
    static func firstCapacity(inputCount: Int, declaredSize: Int?, limit: Int?) -> Int {
        let guess =
            if let declaredSize, declaredSize > 0 {
                min(declaredSize, inputCount * declaredSizeTrust) + 1
            } else {
                inputCount * undeclaredSizeGuess
            }
        return min(max(guess, 16 << 10), ceiling(limit))
    }

    /// The most a whole-body buffer holds: one byte past `limit` (to tell "too large" apart).
    private static func ceiling(_ limit: Int?) -> Int { limit.map { $0 + 1 } ?? Int.max / 2 }

    /// Runs `fill`, `decoder` decoding the whole body `input`, with one buffer that doubles
    /// when full (from ``firstCapacity(inputCount:declaredSize:limit:)`` with the size `input`
    /// declares, at most one byte past `limit`), and returns what was written as `Data` that
    /// owns the buffer, trimmed to it (``LargeBuffer/trim(_:capacity:to:)``).
    static func collect(
        _ input: UnsafeRawBufferPointer, of decoder: some ContentDecoder, limit: Int?,
        _ fill: (NextSpace) throws(ServiceError) -> Void
    ) throws(ServiceError) -> Data {
        let ceiling = ceiling(limit)
        var (buffer, capacity) = LargeBuffer.allocate(
            firstCapacity(inputCount: input.count, declaredSize: decoder.declaredSize(of: input), limit: limit))
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
        (buffer, capacity) = LargeBuffer.trim(buffer, capacity: capacity, to: used)
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
