internal import CZstd
internal import FoundationEssentials

/// A Zstandard stream (RFC 8878, content coding `zstd`), decoded with the system's libzstd.
/// Frames may follow one another (the format allows it); the body must end where a frame
/// does. Frames that need a window over 8 MiB are refused, as RFC 9659 lets HTTP decoders do:
/// the window is memory the decoder must hold, so a server cannot make it hold more.
///
/// Only RFC 8878 frames (and skippable ones) are read, not libzstd's legacy formats. A frame
/// that declares its content size must produce exactly that many bytes. libzstd
/// 1.5.4 checks this only when a whole frame arrives in one call; fed in pieces, it accepts a
/// frame that ends short (found by fuzzing), so the decoder checks it itself, and the result
/// does not depend on how the body was chunked.
final class ZstdDecoder: SpaceFillingDecoder {
    /// 2^23 bytes: 8 MiB.
    static let maximumWindowLog: Int32 = 23
    /// The longest frame header (`ZSTD_FRAMEHEADERSIZE_MAX`).
    static let maximumHeaderSize = 18
    /// `ZSTD_CONTENTSIZE_UNKNOWN` and `ZSTD_CONTENTSIZE_ERROR`, macros Swift does not import.
    static let contentSizeUnknown = UInt64.max
    static let contentSizeError = UInt64.max - 1

    private let context: OpaquePointer?
    /// Inside a frame: input was fed since the last frame ended.
    private var inFrame = false
    /// The current frame's first bytes, until its content size can be read from them.
    private var header: [UInt8] = []
    /// The content size the current frame declares, once its header is read; `nil` before,
    /// and for a frame that declares none.
    private var declaredSize: UInt64?
    private var headerRead = false
    /// Bytes the current frame produced.
    private var frameOut: UInt64 = 0
    private(set) var totalOut = 0

    init() {
        context = ZSTD_createDCtx()
        if let context { _ = ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Self.maximumWindowLog) }
    }

    deinit { if let context { ZSTD_freeDCtx(context) } }

    func finish() throws(ServiceError) {
        if inFrame { throw DecodedOutput.truncated }
    }

    func fill(_ input: UnsafeRawBufferPointer, limit: Int?, nextSpace: NextSpace) throws(ServiceError) {
        guard let context else { throw ServiceError(.decompressionFailed, "zstd could not start a decoder.") }
        var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        var space = try nextSpace(0)
        while true {
            var target = ZSTD_outBuffer(dst: space.baseAddress, size: space.count, pos: 0)
            let consumedBefore = source.pos
            let hint = ZSTD_decompressStream(context, &target, &source)
            if ZSTD_isError(hint) != 0 {
                if ZSTD_getErrorCode(hint) == ZSTD_error_frameParameter_windowTooLarge { throw Self.windowTooLarge }
                throw ServiceError(
                    .decompressionFailed, "The zstd body is corrupt (\(String(cString: ZSTD_getErrorName(hint)))).")
            }
            if !headerRead {
                try readHeader(UnsafeRawBufferPointer(rebasing: input[consumedBefore..<source.pos]))
            }
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
            if source.pos == source.size && (target.pos < target.size || !inFrame) { return }
        }
    }

    /// Collects the current frame's first bytes until its header tells the content size. A
    /// frame must be a Zstandard frame (RFC 8878) or a skippable one: libzstd also decodes the
    /// formats of its 0.x versions, which are no HTTP content coding, and treats them
    /// differently whole and in pieces (found by fuzzing).
    private func readHeader(_ consumed: UnsafeRawBufferPointer) throws(ServiceError) {
        let before = header.count
        header.append(contentsOf: consumed.prefix(Self.maximumHeaderSize - header.count))
        if before < 4 && header.count >= 4 {
            let magic = header.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            guard magic == 0xFD2F_B528 || magic & 0xFFFF_FFF0 == 0x184D_2A50 else {
                throw ServiceError(.decompressionFailed, "The zstd body is not a Zstandard frame (RFC 8878).")
            }
        }
        let size = header.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        if size == Self.contentSizeError {
            // Too short yet (or not a header, which libzstd refuses on its own).
            headerRead = header.count >= Self.maximumHeaderSize
            return
        }
        headerRead = true
        declaredSize = size == Self.contentSizeUnknown ? nil : size
        try checkWindow()
    }

    /// Refuses a frame whose window is over 8 MiB. libzstd checks `ZSTD_d_windowLogMax` only
    /// when it decodes a frame in pieces, not in one pass (when the whole frame is in its input
    /// and fits the output), so Courier reads the window from the header itself (RFC 8878,
    /// 3.1.1.1): the answer must not depend on how the body was chunked.
    private func checkWindow() throws(ServiceError) {
        guard header.count >= 5, header[0] == 0x28 else { return }  // skippable frames have no window
        let descriptor = header[4]
        let window: UInt64
        if descriptor & 0x20 != 0 {
            // Single segment: the window is the content size.
            window = declaredSize ?? 0
        } else {
            guard header.count >= 6 else { return }
            let exponent = UInt64(header[5] >> 3)
            let mantissa = UInt64(header[5] & 7)
            let base: UInt64 = 1 << (10 + exponent)
            window = base + (base >> 3) * mantissa
        }
        if window > 1 << Self.maximumWindowLog { throw Self.windowTooLarge }
    }

    static let windowTooLarge = ServiceError(
        .decompressionFailed, "The zstd body needs a window over \(1 << maximumWindowLog) bytes, more than HTTP allows."
    )

    /// Checks a finished frame against its declared size, and gets ready for the next one.
    private func endFrame() throws(ServiceError) {
        defer {
            header.removeAll(keepingCapacity: true)
            headerRead = false
            declaredSize = nil
            frameOut = 0
        }
        if let declaredSize, declaredSize != frameOut {
            throw ServiceError(
                .decompressionFailed,
                "The zstd body is corrupt (a frame declared \(declaredSize) bytes and held \(frameOut)).")
        }
    }
}
