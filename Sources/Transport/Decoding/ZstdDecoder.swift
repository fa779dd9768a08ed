internal import CZstd
internal import FoundationEssentials

/// A Zstandard stream (RFC 8878, content coding `zstd`), decoded with the system's libzstd.
/// Frames may follow one another (the format allows it); the body must end where a frame
/// does. Frames that need a window over 8 MiB are refused, as RFC 9659 lets HTTP decoders do:
/// the window is memory the decoder must hold, so a server cannot make it hold more.
///
/// Courier follows the framing itself (``ZstdFraming``), so that a body is accepted or refused
/// the same way however it was chunked: only RFC 8878 frames and skippable ones, blocks within
/// the format's limits. A frame that declares its content size must produce exactly that many
/// bytes: libzstd 1.5.4 checks this only when a whole frame arrives in one call; fed in pieces,
/// it accepts a frame that ends short (found by fuzzing), so the decoder checks it too.
final class ZstdDecoder: SpaceFillingDecoder {
    /// 2^23 bytes: 8 MiB.
    static let maximumWindowLog: Int32 = 23

    private let context: OpaquePointer?
    private var framing = ZstdFraming(maximumWindow: 1 << UInt64(maximumWindowLog))
    /// Inside a frame: input was fed since the last frame ended.
    private var inFrame = false
    /// Bytes the current frame produced.
    private var frameOut: UInt64 = 0
    private(set) var totalOut = 0

    init() {
        context = ZSTD_createDCtx()
        if let context { _ = ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Self.maximumWindowLog) }
    }

    deinit { if let context { ZSTD_freeDCtx(context) } }

    func finish() throws(ServiceError) {
        if inFrame || !framing.isBetweenFrames { throw DecodedOutput.truncated }
    }

    func fill(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError) {
        guard let context else { throw ServiceError(.decompressionFailed, "zstd could not start a decoder.") }
        var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        var space = try nextSpace(0)
        while true {
            // A frame header goes in one byte per call. When libzstd completes a header and
            // finds the whole frame after it in the same call, it decodes the frame in one pass,
            // which checks less than block by block does (a block decoding to more than the
            // window is accepted) and, in 1.5.4, reads the frame from where the call's input
            // starts rather than where the header did (a header split across calls is decoded
            // as a different frame). Both found in review and confirmed in C; a byte per call
            // never leaves a whole frame behind a completed header. Some 6 to 18 calls per frame.
            source.size = framing.isReadingFrameHeader ? min(source.pos + 1, input.count) : input.count
            var target = ZSTD_outBuffer(dst: space.baseAddress, size: space.count, pos: 0)
            let consumedBefore = source.pos
            let hint = ZSTD_decompressStream(context, &target, &source)
            if ZSTD_isError(hint) != 0 {
                if ZSTD_getErrorCode(hint) == ZSTD_error_frameParameter_windowTooLarge { throw Self.windowTooLarge }
                throw ServiceError(
                    .decompressionFailed, "The zstd body is corrupt (\(String(cString: ZSTD_getErrorName(hint)))).")
            }
            try framing.read(UnsafeRawBufferPointer(rebasing: input[consumedBefore..<source.pos]))
            // 0: a frame ended and everything it held was written out.
            inFrame = hint != 0
            totalOut += target.pos
            frameOut += UInt64(target.pos)
            if let limit, totalOut > limit { throw DecodedOutput.tooLarge(limit) }
            if !inFrame { try endFrame() }
            space = try nextSpace(target.pos)
            // Done with this input once it is used up and libzstd has nothing left to write: it
            // left space unused, or a frame just ended (with space exactly full, calling again
            // would start waiting for a next frame's header, and the body would look truncated).
            if source.pos == input.count && (target.pos < target.size || !inFrame) { return }
        }
    }

    /// The first frame's declared content size (a skippable frame declares none).
    func declaredSize(of input: UnsafeRawBufferPointer) -> Int? {
        let size = ZSTD_getFrameContentSize(input.baseAddress, input.count)
        // ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR are the two largest values.
        guard size > 0, size < UInt64.max - 1, size <= UInt64(Int.max) else { return nil }
        return Int(size)
    }

    static let windowTooLarge = ServiceError(
        .decompressionFailed, "The zstd body needs a window over \(1 << maximumWindowLog) bytes, more than HTTP allows."
    )

    /// Checks a finished frame against its declared size, and gets ready for the next one.
    private func endFrame() throws(ServiceError) {
        defer { frameOut = 0 }
        // libzstd and the framing must agree on where the frame ended.
        guard framing.isBetweenFrames else {
            throw ServiceError(.decompressionFailed, "The zstd body is corrupt (a frame ended inside its framing).")
        }
        if let declaredSize = framing.declaredSize, declaredSize != frameOut {
            throw ServiceError(
                .decompressionFailed,
                "The zstd body is corrupt (a frame declared \(declaredSize) bytes and held \(frameOut)).")
        }
    }
}
