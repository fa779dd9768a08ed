/// Follows a Zstandard body's framing (RFC 8878, section 3.1) as the decoder consumes it: frame
/// headers, block headers and checksums are read, block contents only counted.
///
/// libzstd 1.5.4 decodes a frame in one of two ways: in one pass when the whole frame is in its
/// input and fits the output, block by block otherwise. The two disagree on malformed frames
/// (found by fuzzing: a compressed block of size 0 ends a frame in pieces and is corrupt in one
/// pass; a window over the limit, a raw block wider than the window, a legacy 0.x frame). So
/// Courier reads the framing itself, the same way whatever the chunking, and refuses what
/// either path would refuse; libzstd does the decoding.
struct ZstdFraming {
    /// The largest block the format allows (`Block_Maximum_Size` is at most 128 KiB).
    static let maximumBlockSize: UInt64 = 128 << 10

    /// What the bytes being read are.
    private enum Field {
        case magic, skippableSize, descriptor, windowDescriptor, dictionaryID, contentSize, blockHeader
    }

    private enum Stage {
        /// Collecting `width` bytes of `field`, least significant first.
        case reading(Field, width: Int)
        /// Counting `remaining` bytes of content, then reading `width` bytes of `next`.
        case skipping(remaining: UInt64, then: Field, width: Int)
    }

    private var stage = Stage.reading(.magic, width: 4)
    private var value: UInt64 = 0
    private var collected = 0

    // The current frame's header.
    private var descriptor: UInt8 = 0
    private var window: UInt64 = 0
    private var checksummed = false
    private let maximumWindow: UInt64

    /// The content size the current (or just ended) frame declares; `nil` for a frame that
    /// declares none, or a skippable frame.
    private(set) var declaredSize: UInt64?

    /// Reading a frame header, or between frames (the next magic number is a header's first
    /// field): the bytes libzstd must be fed one at a time (see ``ZstdDecoder``).
    var isReadingFrameHeader: Bool {
        if case .reading(let field, _) = stage { field != .blockHeader } else { false }
    }

    /// Between frames: nothing of a next frame read yet.
    var isBetweenFrames: Bool {
        if case .reading(.magic, _) = stage { collected == 0 } else { false }
    }

    /// - Parameter maximumWindow: the widest window a frame may ask for.
    init(maximumWindow: UInt64) {
        self.maximumWindow = maximumWindow
    }

    /// Reads `bytes`, the next ones the decoder consumed.
    mutating func read(_ bytes: UnsafeRawBufferPointer) throws(ServiceError) {
        var index = 0
        while index < bytes.count {
            switch stage {
            case .skipping(let remaining, let next, let width):
                let step = min(remaining, UInt64(bytes.count - index))
                index += Int(step)
                skip(remaining - step, then: next, width: width)
            case .reading(let field, let width):
                value |= UInt64(bytes[index]) << (8 * UInt64(collected))
                collected += 1
                index += 1
                if collected == width {
                    let complete = value
                    value = 0
                    collected = 0
                    try finished(field, complete)
                }
            }
        }
    }

    private mutating func skip(_ count: UInt64, then next: Field, width: Int) {
        stage = count > 0 ? .skipping(remaining: count, then: next, width: width) : .reading(next, width: width)
    }

    private mutating func expect(_ field: Field, width: Int) {
        stage = .reading(field, width: width)
    }

    private mutating func finished(_ field: Field, _ value: UInt64) throws(ServiceError) {
        switch field {
        case .magic:
            declaredSize = nil
            if value == 0xFD2F_B528 {
                expect(.descriptor, width: 1)
            } else if value & 0xFFFF_FFF0 == 0x184D_2A50 {
                expect(.skippableSize, width: 4)
            } else {
                // libzstd also reads its 0.x formats, which are no HTTP content coding.
                throw ServiceError(.decompressionFailed, "The zstd body is not a Zstandard frame (RFC 8878).")
            }
        case .skippableSize:
            skip(value, then: .magic, width: 4)
        case .descriptor:
            descriptor = UInt8(value)
            checksummed = descriptor & 0x04 != 0
            if descriptor & 0x08 != 0 {
                throw ServiceError(
                    .decompressionFailed, "The zstd body is corrupt (a reserved frame header bit is set).")
            }
            if isSingleSegment {
                afterWindow()
            } else {
                expect(.windowDescriptor, width: 1)
            }
        case .windowDescriptor:
            let base: UInt64 = 1 << (10 + (value >> 3))
            window = base + (base >> 3) * (value & 7)
            if window > maximumWindow { throw ZstdDecoder.windowTooLarge }
            afterWindow()
        case .dictionaryID:
            afterDictionaryID()
        case .contentSize:
            let size = contentSizeWidth == 2 ? value + 256 : value
            declaredSize = size
            if isSingleSegment {
                window = size
                if window > maximumWindow { throw ZstdDecoder.windowTooLarge }
            }
            expect(.blockHeader, width: 3)
        case .blockHeader:
            try block(header: value)
        }
    }

    private var isSingleSegment: Bool { descriptor & 0x20 != 0 }

    private var contentSizeWidth: Int {
        switch descriptor >> 6 {
        case 0: isSingleSegment ? 1 : 0
        case 1: 2
        case 2: 4
        default: 8
        }
    }

    private mutating func afterWindow() {
        let width = [0, 1, 2, 4][Int(descriptor & 3)]
        if width > 0 {
            expect(.dictionaryID, width: width)
        } else {
            afterDictionaryID()
        }
    }

    private mutating func afterDictionaryID() {
        let width = contentSizeWidth
        if width > 0 {
            expect(.contentSize, width: width)
        } else {
            expect(.blockHeader, width: 3)
        }
    }

    /// A block header (RFC 8878, 3.1.1.2): last-block bit, type, size.
    private mutating func block(header: UInt64) throws(ServiceError) {
        let isLast = header & 1 != 0
        let type = (header >> 1) & 3
        let size = header >> 3
        let maximum = min(window, Self.maximumBlockSize)
        let content: UInt64
        switch type {
        case 0: content = size  // raw
        case 1: content = 1  // RLE: one byte, repeated `size` times
        case 2:  // compressed: at least a literals section header
            guard size > 0 else {
                throw ServiceError(.decompressionFailed, "The zstd body is corrupt (an empty compressed block).")
            }
            content = size
        default:
            throw ServiceError(.decompressionFailed, "The zstd body is corrupt (a block of the reserved type).")
        }
        // Both what the block holds and what it stands for must fit (libzstd checks the first
        // only in pieces: an RLE block in a frame whose window is 0, found by fuzzing).
        let width = max(size, content)
        if width > maximum {
            throw ServiceError(
                .decompressionFailed,
                "The zstd body is corrupt (a block of \(width) bytes, over its \(maximum)-byte maximum).")
        }
        if isLast {
            skip(content + (checksummed ? 4 : 0), then: .magic, width: 4)
        } else {
            skip(content, then: .blockHeader, width: 3)
        }
    }
}
