internal import CZlib
internal import FoundationEssentials

/// A zlib inflate stream for gzip, zlib-wrapped deflate and raw deflate.
///
/// Feed it input in one piece (``inflateAll(_:limit:)``) or chunk by chunk
/// (``inflate(_:limit:output:)`` then ``finish()``). A stream that stops before zlib
/// reports its end is `decompressionFailed`, never a short body.
final class Inflater: ContentDecoder {
    // zlib keeps a pointer back to the z_stream, so it must not move: it lives on the heap.
    private let stream: UnsafeMutablePointer<z_stream>
    private let encoding: ContentEncoding
    private var initialized = false
    private var ended = false
    private var sawInput = false
    private(set) var totalOut = 0
    /// A first deflate chunk of one byte, held until a second byte tells zlib from raw deflate.
    private var heldByte: UInt8?

    init(encoding: ContentEncoding) {
        precondition(encoding == .gzip || encoding == .deflate, "an inflater decodes gzip and deflate only")
        self.encoding = encoding
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
    }

    deinit {
        if initialized { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    private func start(firstBytes: UnsafeRawBufferPointer) throws(ServiceError) {
        let windowBits: Int32
        switch encoding {
        case .gzip: windowBits = 15 + 16
        case .deflate:
            // "deflate" is meant to be zlib-wrapped (RFC 9110), but some servers send raw
            // deflate; a zlib header is two bytes whose big-endian value is a multiple of 31.
            if firstBytes.count >= 2, firstBytes[0] & 0x0F == 8,
                (UInt16(firstBytes[0]) << 8 | UInt16(firstBytes[1])) % 31 == 0
            {
                windowBits = 15
            } else {
                windowBits = -15
            }
        case .identity, .brotli, .zstd: preconditionFailure("an inflater decodes gzip and deflate only")
        }
        let status = inflateInit2_(stream, windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            throw ServiceError(.decompressionFailed, "zlib could not start an inflate stream (\(status)).")
        }
        initialized = true
    }

    /// Inflates `input`, handing each produced piece to `output`. Throws
    /// `responseTooLarge` once more than `limit` bytes came out.
    func inflate(
        _ input: UnsafeRawBufferPointer, limit: Int?,
        output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        guard input.count > 0 else { return }
        if !initialized, encoding == .deflate, input.count == 1 || heldByte != nil {
            guard let held = heldByte else {
                heldByte = input[0]
                sawInput = true
                return
            }
            heldByte = nil
            let joined = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count + 1, alignment: 1)
            defer { joined.deallocate() }
            joined[0] = held
            UnsafeMutableRawBufferPointer(rebasing: joined[1...]).copyMemory(from: input)
            return try inflate(UnsafeRawBufferPointer(joined), limit: limit, output: output)
        }
        if !initialized { try start(firstBytes: input) }
        sawInput = true
        let scratch = DecodedOutput.scratch()
        defer { scratch.deallocate() }
        try run(input, limit: limit) { (filled: Int) throws(ServiceError) in
            if filled > 0 { try output(UnsafeRawBufferPointer(rebasing: scratch[..<filled])) }
            return scratch
        }
    }

    /// Inflates a whole body into one buffer, growing it as needed.
    func inflateAll(_ input: UnsafeRawBufferPointer, limit: Int?) throws(ServiceError) -> Data {
        guard input.count > 0 else { return Data() }
        try start(firstBytes: input)
        sawInput = true
        let data = try DecodedOutput.collect(input, of: self, limit: limit) { (nextSpace) throws(ServiceError) in
            try run(input, limit: limit, nextSpace: nextSpace)
        }
        try finish()
        return data
    }

    func decode(
        _ input: UnsafeRawBufferPointer, limit: Int?, output: (UnsafeRawBufferPointer) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        try inflate(input, limit: limit, output: output)
    }

    func decodeAll(_ input: UnsafeRawBufferPointer, limit: Int?) throws(ServiceError) -> Data {
        try inflateAll(input, limit: limit)
    }

    /// A gzip body's last four bytes, its last member's `ISIZE` (RFC 1952: the size modulo
    /// 2^32; the whole size when the body is one member, as bodies are). Deflate declares none.
    func declaredSize(of input: UnsafeRawBufferPointer) -> Int? {
        guard encoding == .gzip, input.count >= 18 else { return nil }
        return Int(input.loadUnaligned(fromByteOffset: input.count - 4, as: UInt32.self).littleEndian)
    }

    /// Confirms that the stream reached its end.
    func finish() throws(ServiceError) {
        if sawInput && !ended { throw DecodedOutput.truncated }
    }

    /// The inflate loop (see ``NextSpace``).
    private func run(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError) {
        if ended {
            // A chunk may end exactly where a gzip member did: the next one starts here (zlib checks its header).
            guard encoding == .gzip else {
                throw DecodedOutput.trailingData
            }
            inflateReset(stream)
            ended = false
        }
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        var space = try nextSpace(0)
        while true {
            stream.pointee.next_out = space.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(space.count)
            let status = CZlib.inflate(stream, Z_NO_FLUSH)
            let produced = space.count - Int(stream.pointee.avail_out)
            let outputFull = stream.pointee.avail_out == 0
            totalOut += produced
            if let limit, totalOut > limit { throw DecodedOutput.tooLarge(limit) }
            switch status {
            case Z_STREAM_END:
                space = try nextSpace(produced)
                guard stream.pointee.avail_in > 0 else {
                    ended = true
                    return
                }
                // Concatenated gzip members are allowed (RFC 1952); anything else is garbage. A chunk
                // may hold only the next member's first byte: zlib checks the rest of its header.
                let next = stream.pointee.next_in!
                guard encoding == .gzip, next[0] == 0x1F, stream.pointee.avail_in == 1 || next[1] == 0x8B else {
                    throw ServiceError(.decompressionFailed, "Data follows the end of the compressed stream.")
                }
                inflateReset(stream)
            case Z_OK, Z_BUF_ERROR:
                space = try nextSpace(produced)
                if stream.pointee.avail_in == 0 && !outputFull { return }
                if status == Z_BUF_ERROR && produced == 0 {
                    if stream.pointee.avail_in == 0 { return }
                    throw ServiceError(.decompressionFailed, "The compressed body is corrupt.")
                }
            default:
                throw ServiceError(.decompressionFailed, "The compressed body is corrupt (zlib error \(status)).")
            }
        }
    }
}
