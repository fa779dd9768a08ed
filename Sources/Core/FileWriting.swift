#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Writes every byte of `bytes` to `descriptor`, again after a short write or `EINTR`.
/// Returns nil when all were written, else the `errno` of the failure (`ENOSPC` for a write
/// that wrote nothing). The one loop for the files Courier writes: downloads, their partial
/// files, request spools.
package func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    guard let base = bytes.baseAddress else { return nil }
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, base + offset, bytes.count - offset)
        if written > 0 {
            offset += written
        } else if written < 0, errno == EINTR {
            continue
        } else {
            return written < 0 ? errno : ENOSPC
        }
    }
    return nil
}
