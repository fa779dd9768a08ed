internal import FoundationEssentials
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Where curl's read callback takes request body bytes from: memory or an open file.
/// Used on the loop thread only.
final class UploadSource {
    private enum Storage {
        case bytes(Data)
        case file(descriptor: Int32)
    }

    private let storage: Storage
    private var offset = 0
    /// The body size, sent as `Content-Length`.
    let length: Int64

    init(_ body: RequestBody) throws(ServiceError) {
        switch body.storage {
        case .bytes(let data):
            storage = .bytes(data)
            length = Int64(data.count)
        case .file(let path):
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw ServiceError(.fileAccess, "Cannot open the upload file (errno \(errno)).")
            }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else {
                close(descriptor)
                throw ServiceError(.fileAccess, "Cannot read the size of the upload file (errno \(errno)).")
            }
            storage = .file(descriptor: descriptor)
            length = Int64(info.st_size)
        }
    }

    deinit {
        if case .file(let descriptor) = storage { close(descriptor) }
    }

    /// Copies the next bytes into `target`; returns the count, 0 at the end, or nil on error.
    func read(into target: UnsafeMutableRawBufferPointer) -> Int? {
        switch storage {
        case .bytes(let data):
            let count = min(target.count, data.count - offset)
            guard count > 0 else { return 0 }
            data.withUnsafeBytes { source in
                target.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            offset += count
            return count
        case .file(let descriptor):
            while true {
                let count = Glibc.read(descriptor, target.baseAddress, target.count)
                if count >= 0 { return count }
                if errno != EINTR { return nil }
            }
        }
    }

    /// Moves back to `position` (curl rewinds when it resends on a fresh connection).
    func seek(to position: Int64) -> Bool {
        guard position >= 0, position <= length else { return false }
        switch storage {
        case .bytes:
            offset = Int(position)
            return true
        case .file(let descriptor):
            return lseek(descriptor, off_t(position), SEEK_SET) == off_t(position)
        }
    }
}
