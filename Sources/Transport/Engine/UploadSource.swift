internal import FoundationEssentials

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Where curl's read callback takes request body bytes from: memory, open files, a sequence of
/// both, or a stream's ``UploadChannel``. Files are opened (and sized) up front, so a missing
/// file fails the request before anything is sent. Used on the loop thread only.
final class UploadSource {
    private enum Piece {
        case bytes(Data)
        case file(descriptor: Int32, size: Int64)

        var size: Int64 {
            switch self {
            case .bytes(let data): Int64(data.count)
            case .file(_, let size): size
            }
        }
    }

    private var pieces: [Piece] = []
    /// The piece being read and the offset inside it.
    private var index = 0
    private var offset: Int64 = 0
    /// The body size, sent as `Content-Length`; -1 for a stream of unknown length.
    let length: Int64
    /// A streamed body's channel (and then no pieces).
    let channel: UploadChannel?

    /// What a read gave.
    enum Read {
        case bytes(Int)
        /// Nothing yet (a stream): pause until the channel resumes the transfer.
        case pause
        case failed(ServiceError)
    }

    /// The error for a streamed body asked for a second time: `why` says what asked.
    static func notReplayable(_ why: String) -> ServiceError {
        ServiceError(.bodyNotReplayable, why + ", but its body is a stream, which is read once.")
    }

    init(_ body: RequestBody, streamBufferSize: Int) throws(ServiceError) {
        guard let segments = body.segments else {
            if let streamed = body.streamed, streamed.hasTrailers, let length = streamed.length {
                throw ServiceError(
                    .invalidRequest,
                    "A streamed body with trailer fields is sent chunked, so it cannot also declare a length (\(length) bytes)."
                )
            }
            guard let streamed = body.streamed, let pump = streamed.take() else {
                throw Self.notReplayable(
                    "The request had to be sent again (a redirect that keeps its body, or a retry)")
            }
            channel = UploadChannel(highWater: streamBufferSize, declaredLength: streamed.length, pump: pump)
            length = streamed.length.map { Int64($0) } ?? -1
            return
        }
        channel = nil
        var total: Int64 = 0
        for segment in segments {
            let piece: Piece
            switch segment {
            case .bytes(let data):
                piece = .bytes(data)
            case .file(let path):
                do {
                    piece = try Self.openFile(path)
                } catch {
                    Self.close(pieces)
                    throw error
                }
            }
            total += piece.size
            pieces.append(piece)
        }
        length = total
    }

    deinit {
        Self.close(pieces)
        channel?.close()
    }

    private static func openFile(_ path: String) throws(ServiceError) -> Piece {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ServiceError(.fileAccess, "Cannot open the upload file (errno \(errno)).")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw ServiceError(.fileAccess, "Cannot read the size of the upload file (errno \(code)).")
        }
        return .file(descriptor: descriptor, size: Int64(info.st_size))
    }

    private static func close(_ pieces: [Piece]) {
        for case .file(let descriptor, _) in pieces { Glibc.close(descriptor) }
    }

    /// Copies the next bytes into `target`: their count (0 at the end), a pause (a stream with
    /// nothing buffered yet), or a failure (a file that shrank while it was sent, a stream that
    /// failed).
    func read(into target: UnsafeMutableRawBufferPointer) -> Read {
        if let channel {
            switch channel.read(into: target) {
            case .bytes(let count, _): return .bytes(count)
            case .pause: return .pause
            case .end: return .bytes(0)
            case .failed(let error): return .failed(error)
            }
        }
        return readPieces(into: target).map(Read.bytes)
            ?? .failed(ServiceError(.fileAccess, "Reading the request body failed."))
    }

    private func readPieces(into target: UnsafeMutableRawBufferPointer) -> Int? {
        while index < pieces.count {
            let piece = pieces[index]
            let remaining = piece.size - offset
            if remaining <= 0 {
                index += 1
                offset = 0
                continue
            }
            let wanted = Int(min(Int64(target.count), remaining))
            switch piece {
            case .bytes(let data):
                data.withUnsafeBytes { source in
                    target.baseAddress!.copyMemory(from: source.baseAddress! + Int(offset), byteCount: wanted)
                }
                offset += Int64(wanted)
                return wanted
            case .file(let descriptor, _):
                while true {
                    let count = pread(descriptor, target.baseAddress, wanted, off_t(offset))
                    if count > 0 {
                        offset += Int64(count)
                        return count
                    }
                    if count == 0 { return nil }  // the file is shorter than announced
                    if errno != EINTR { return nil }
                }
            }
        }
        return 0
    }

    /// Moves back to `position` (curl rewinds when it resends on a fresh connection). A stream
    /// moves back only to its start, and only before anything was read.
    func seek(to position: Int64) -> Bool {
        if let channel { return position == 0 && channel.canRewindToStart }
        guard position >= 0, position <= length else { return false }
        var start: Int64 = 0
        for (candidate, piece) in pieces.enumerated() {
            if position < start + piece.size || candidate == pieces.count - 1 {
                index = candidate
                offset = position - start
                return true
            }
            start += piece.size
        }
        index = 0
        offset = 0
        return true
    }
}
