internal import FoundationEssentials
internal import Glibc

/// File helpers of ``DiskCache``: names, directories, whole reads and writes, times.
extension DiskCache {
    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    static func makeDirectory(_ path: String) throws(ServiceError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                let code = errno
                throw ServiceError(
                    .fileAccess,
                    "Disk cache could not create \(prefix): \(String(cString: strerror(code))) (errno \(code)).")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ServiceError(.fileAccess, "Disk cache path \(path) is not a directory.")
        }
    }

    static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while offset < buffer.count {
            let count = read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            offset += count
        }
        return offset
    }

    static func writeFully(_ descriptor: Int32, header: [UInt8], body: Data) -> Bool {
        header.withUnsafeBytes { head in
            body.withUnsafeBytes { tail in
                var pieces = [(head.baseAddress, head.count), (tail.baseAddress, tail.count)]
                var index = 0
                while index < pieces.count {
                    if pieces[index].1 == 0 || pieces[index].0 == nil {
                        index += 1
                        continue
                    }
                    var vectors = pieces[index...].map {
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.0), iov_len: $0.1)
                    }
                    let written = writev(descriptor, &vectors, Int32(vectors.count))
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { return false }
                    var remaining = written
                    while remaining > 0 && index < pieces.count {
                        let used = min(remaining, pieces[index].1)
                        pieces[index] = (pieces[index].0.map { $0 + used }, pieces[index].1 - used)
                        remaining -= used
                        if pieces[index].1 == 0 { index += 1 }
                    }
                }
                return true
            }
        }
    }

    static func seconds(_ time: Glibc.timespec) -> Double { Double(time.tv_sec) + Double(time.tv_nsec) / 1e9 }

    static func timeSpec(_ seconds: Double) -> Glibc.timespec {
        let whole = seconds.rounded(.down)
        return Glibc.timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    }
}
