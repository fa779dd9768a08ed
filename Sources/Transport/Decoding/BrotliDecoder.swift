internal import CBrotli
internal import FoundationEssentials

/// A brotli stream (RFC 7932, content coding `br`), decoded with the system's libbrotlidec.
/// One stream per body: brotli has no concatenated members, so bytes after its end are
/// `decompressionFailed`. The window is the format's standard one (at most 16 MiB; the
/// large-window extension stays off).
final class BrotliDecoder: SpaceFillingDecoder {
    private let state: OpaquePointer?
    private var ended = false
    private var sawInput = false
    private(set) var totalOut = 0

    init() { state = BrotliDecoderCreateInstance(nil, nil, nil) }

    deinit { if let state { BrotliDecoderDestroyInstance(state) } }

    func finish() throws(ServiceError) {
        if sawInput && !ended { throw DecodedOutput.truncated }
    }

    func fill(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError) {
        guard let state else { throw ServiceError(.decompressionFailed, "brotli could not start a decoder.") }
        if ended { throw DecodedOutput.trailingData }
        sawInput = true
        var availableIn = input.count
        var nextIn: UnsafePointer<UInt8>? = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var space = try nextSpace(0)
        while true {
            var availableOut = space.count
            var nextOut: UnsafeMutablePointer<UInt8>? = space.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            let produced = space.count - availableOut
            totalOut += produced
            if let limit, totalOut > limit { throw DecodedOutput.tooLarge(limit) }
            space = try nextSpace(produced)
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                ended = true
                if availableIn > 0 { throw DecodedOutput.trailingData }
                return
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                continue
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                return
            default:
                let reason = String(cString: BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state)))
                throw ServiceError(.decompressionFailed, "The brotli body is corrupt (\(reason)).")
            }
        }
    }
}
