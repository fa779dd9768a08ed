package import FoundationEssentials
internal import Glibc

extension DiskCache: CachePurging {
    /// Rescans the directory (others may have written), then removes or marks every entry
    /// `target` names. An entry's key and tags are read from its file's metadata the first
    /// time a purge needs them (a purge of a directory this instance did not write reads each
    /// file's head once), then kept in the index.
    package func purge(_ target: PurgeTarget, soft: Bool, now: Date) throws -> Int {
        scan()
        var count = 0
        for digest in Array(index.keys) {
            guard let identity = identity(of: digest),
                target.matches(url: CacheKey.url(ofRaw: identity.key), tags: identity.tags)
            else { continue }
            let path = path(for: digest)
            guard soft else {
                discard(digest, path: path)
                count += 1
                continue
            }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            var info = stat()
            let outcome: ReadOutcome =
                fstat(descriptor, &info) == 0 ? readEntry(descriptor, info, key: CacheKey(identity.key)) : .defective
            close(descriptor)
            guard case .hit(let response) = outcome else { continue }
            guard response.isMarkable(at: now) else { continue }  // marked already, or newer
            try store(response.purged(at: now), for: CacheKey(identity.key))
            count += 1
        }
        return count
    }

    /// The key and tags of an entry file, from the index or else read from its metadata (and
    /// then kept in the index); nil for a file that is gone or not an intact entry.
    func identity(of digest: String) -> Identity? {
        if let known = index[digest]?.identity { return known }
        let path = path(for: digest)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        var prefix = [UInt8](repeating: 0, count: DiskEntryFile.prefixLength)
        let read = prefix.withUnsafeMutableBytes { Self.readFully(descriptor, into: $0) }
        guard read == prefix.count,
            let lengths = prefix.withUnsafeBytes({ raw in try? DiskEntryFile.prefix(raw) }),
            lengths.metadataLength <= options.sizeLimit / 8
        else { return nil }
        var head = prefix + [UInt8](repeating: 0, count: lengths.metadataLength)
        let metadataRead = head.withUnsafeMutableBytes {
            Self.readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[DiskEntryFile.prefixLength...]))
        }
        guard metadataRead == lengths.metadataLength,
            let identity = head.withUnsafeBytes({ raw -> Identity? in
                guard let found = try? DiskEntryFile.identity(raw) else { return nil }
                return Identity(key: found.key, tags: CachedResponse.tags(in: found.fields))
            })
        else { return nil }
        index[digest]?.identity = identity
        index[digest]?.inode = UInt64(info.st_ino)
        return identity
    }
}
