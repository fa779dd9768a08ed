internal import CourierCore
internal import FoundationEssentials

#if canImport(Glibc)
internal import Glibc
#endif

/// A download's temporary file beside its destination (`<destination>.courier-<random>.part`,
/// mode 0600), renamed over the destination only once complete.
struct PartialFile: Sendable {
    let path: String
    private let descriptor: Int32

    /// Creates the temporary file in the destination's directory, so the final rename stays on
    /// one file system and is atomic.
    init(beside destination: String) throws {
        path = destination + ".courier-\(UInt64.random(in: 0...UInt64.max)).part"
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ServiceError(.fileAccess, "Cannot create the download's temporary file (errno \(errno)).")
        }
    }

    /// Cuts the file to `length` bytes and writes from there on.
    func truncate(at length: Int64) throws {
        guard ftruncate(descriptor, off_t(length)) == 0, lseek(descriptor, off_t(length), SEEK_SET) >= 0 else {
            throw ServiceError(.fileAccess, "Cannot position the download file (errno \(errno)).")
        }
    }

    /// Appends `data` whole.
    func write(_ data: Data) throws {
        if let failed = data.withUnsafeBytes({ writeFully(descriptor, $0) }) {
            throw ServiceError(.fileAccess, "Writing the download file failed (errno \(failed)).")
        }
    }

    /// Renames the file over `destination` (replacing what was there, atomically).
    func move(to destination: String) throws {
        guard rename(path, destination) == 0 else {
            throw ServiceError(.fileAccess, "Cannot move the download into place (errno \(errno)).")
        }
    }

    /// Closes the file, and removes it when `removing`.
    func close(removing: Bool) {
        _ = Glibc.close(descriptor)
        if removing { unlink(path) }
    }
}
