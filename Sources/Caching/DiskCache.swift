internal import Dispatch
public import FoundationEssentials
internal import Glibc

/// A cache directory with one file per entry, bounded by size with least-recently-used eviction.
///
/// - **Files**: named by the SHA-256 of the key; each holds a versioned header with the full
///   key, the metadata and CRC-32C checksums of metadata and body (see `DiskEntryFile`). A read
///   checks all of it: a truncated, flipped or older-format file is a miss and is removed;
///   files with other names are never touched.
/// - **Writes** go to a temporary file in the same directory, then `rename`: a crash or a kill
///   mid-write leaves the old entry or the new one, never a torn one. They use plain POSIX
///   writes, without `fsync` unless ``Options/synchronousWrites`` asks for it (the checksums
///   catch what a power loss tears).
/// - **Index**: built at first use from the directory's metadata alone (names, sizes, modification
///   times), so opening 100,000 entries reads no body. A hit records its access by touching the
///   file's modification time, without rewriting it.
/// - **Several instances or processes** may share a directory: entries only ever appear by
///   `rename` and are checked when read, so a reader sees a whole entry or none. Each instance
///   keeps its own index; before evicting it rescans the directory, so what others wrote is
///   counted, and it evicts down to 90% of the limit.
/// - The directory is created `0700` and files `0600`.
///
/// Bookkeeping is actor-isolated and runs, with writes and large reads, on the cache's own
/// serial queue, never on the cooperative thread pool. Small entries are read on the caller's
/// thread (``Options/inlineReadLimit``): reading needs no bookkeeping, since a hit records its
/// access in the file itself.
public actor DiskCache: CacheStore, CacheEventSource {
    /// How a disk cache behaves.
    public struct Options: Sendable {
        /// The most bytes of entry files kept (default 256 MiB). An entry larger than an eighth
        /// of this is not stored.
        public var sizeLimit: Int
        /// Whether each write is flushed with `fsync` (file and directory) before it counts:
        /// slower, but an entry survives a power loss. Default `false`.
        public var synchronousWrites: Bool
        /// Entry files up to this many bytes (default 64 KiB) are read on the caller's thread:
        /// an `open`, a `read` the page cache usually answers and a checksum cost less than the
        /// hand-off to the cache's queue. Larger ones, and all writes, run on that queue. Set 0
        /// to keep every file operation off the cooperative pool (a cache on slow storage).
        public var inlineReadLimit: Int

        /// Creates options.
        public init(sizeLimit: Int = 256 << 20, synchronousWrites: Bool = false, inlineReadLimit: Int = 64 << 10) {
            self.sizeLimit = sizeLimit
            self.synchronousWrites = synchronousWrites
            self.inlineReadLimit = inlineReadLimit
        }
    }

    struct IndexEntry {
        var size: Int
        var lastAccess: Double
        /// `nil` when never read by this instance (found by a scan).
        var expiry: Date??
        /// The key and tags a purge compares; `nil` until this instance wrote the entry or a
        /// purge read them from the file.
        var identity: Identity?
        /// The file's inode when ``identity`` was learned (0: unknown): a scan keeps the
        /// identity only for the same file (another process's write is a new file, renamed in).
        var inode: UInt64 = 0
    }

    /// What a purge needs to know of an entry: its full key, and its response's tags.
    struct Identity {
        var key: String
        var tags: [String]
    }

    /// The directory.
    nonisolated let directory: String
    /// The options in force.
    nonisolated let options: Options
    /// Receive this cache's eviction events.
    package nonisolated let observers = CacheObservers()
    private nonisolated let executor: QueueExecutor
    var index: [String: IndexEntry] = [:]
    private var indexLoaded = false
    private var size = 0

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Opens (and creates, `0700`, with its parents) the cache directory at `directory`. The
    /// index is built on first use, off the caller's thread.
    public init(directory: String, options: Options = Options()) throws(ServiceError) {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.options = options
        executor = QueueExecutor(label: "courier.disk-cache")
        try Self.makeDirectory(self.directory)
    }

    /// Bytes of entry files, as this instance knows them.
    public var totalSize: Int {
        loadIndexIfNeeded()
        return size
    }

    /// Entries, as this instance knows them.
    public var count: Int {
        loadIndexIfNeeded()
        return index.count
    }

    /// The entry stored for `key`, or nil. The file is read and verified on the caller's thread
    /// when it is at most ``Options/inlineReadLimit`` bytes, on the cache's queue otherwise.
    public nonisolated func entry(for key: CacheKey) async throws -> CachedResponse? {
        let path = path(for: key.digest)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno != ENOENT { throw fileError("open", path) }
            return nil  // the index forgets it at its next scan
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let error = fileError("stat", path)
            close(descriptor)
            throw error
        }
        guard Int(info.st_size) <= options.inlineReadLimit else {
            return await readOnQueue(descriptor, info, key: key, path: path)
        }
        let outcome = readEntry(descriptor, info, key: key)
        close(descriptor)
        switch outcome {
        case .hit(let response): return response
        case .otherKey: return nil
        case .defective: await discard(key.digest, path: path, ifStill: info)
        }
        return nil
    }

    /// Large entries: read on the cache's queue, which also records the hit in the index.
    private func readOnQueue(_ descriptor: Int32, _ info: stat, key: CacheKey, path: String) -> CachedResponse? {
        defer { close(descriptor) }
        switch readEntry(descriptor, info, key: key) {
        case .hit(let response):
            loadIndexIfNeeded()
            remember(
                key.digest, size: Int(info.st_size), lastAccess: Date().timeIntervalSince1970,
                expiry: response.expiresAt, identity: Identity(key: key.rawValue, tags: response.tags),
                inode: UInt64(info.st_ino))
            return response
        case .otherKey: return nil
        case .defective:
            discard(key.digest, path: path, ifStill: info)
            return nil
        }
    }

    enum ReadOutcome {
        case hit(CachedResponse)
        /// Intact, but written for another key with the same digest: left alone.
        case otherKey
        /// Torn, damaged, of another format, or too large to be ours.
        case defective
    }

    /// Reads and verifies the open entry file; on a hit, records the access in its modification
    /// time (what eviction orders by), which needs no bookkeeping on the actor.
    nonisolated func readEntry(_ descriptor: Int32, _ info: stat, key: CacheKey) -> ReadOutcome {
        let length = Int(info.st_size)
        // Never stored that large: not ours, and not worth reading into memory.
        guard length >= DiskEntryFile.prefixLength, length <= options.sizeLimit / 8 else { return .defective }
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            initialized = Self.readFully(descriptor, into: UnsafeMutableRawBufferPointer(buffer))
        }
        guard bytes.count == length else { return .defective }
        let decoded: CachedResponse?
        do {
            decoded = try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws(DiskEntryFile.Defect) in
                try DiskEntryFile.decode(buffer, key: key)
            }
        } catch {
            return .defective
        }
        guard let decoded else { return .otherKey }
        // atime: UTIME_OMIT (leaves it as it is); mtime: now, the entry's last use.
        var times = [Glibc.timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), Self.timeSpec(Date().timeIntervalSince1970)]
        _ = futimens(descriptor, &times)  // failure only costs LRU precision
        return .hit(decoded)
    }

    public func store(_ response: CachedResponse, for key: CacheKey) throws {
        loadIndexIfNeeded()
        let header = DiskEntryFile.encode(response, key: key)
        let length = header.count + response.body.count
        let path = path(for: key.digest)
        guard length <= options.sizeLimit / 8 else {
            if index[key.digest] != nil { discard(key.digest, path: path) }
            return
        }
        // Unique across processes and across instances in one process.
        let temporary =
            "\(directory)/.tmp-\(key.digest.prefix(16))-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw fileError("create", temporary) }
        var ok = Self.writeFully(descriptor, header: header, body: response.body)
        if ok && options.synchronousWrites { ok = fsync(descriptor) == 0 }
        var written = stat()
        let inode = fstat(descriptor, &written) == 0 ? UInt64(written.st_ino) : 0
        let closed = close(descriptor) == 0
        guard ok, closed, rename(temporary, path) == 0 else {
            let error = fileError("write", path)
            unlink(temporary)
            throw error
        }
        if options.synchronousWrites { syncDirectory() }
        remember(
            key.digest, size: length, lastAccess: Date().timeIntervalSince1970, expiry: .some(response.expiresAt),
            identity: Identity(key: key.rawValue, tags: response.tags), inode: inode)
        if size > options.sizeLimit { evict() }
    }

    public func removeEntry(for key: CacheKey) {
        loadIndexIfNeeded()
        discard(key.digest, path: path(for: key.digest))
    }

    public func removeExpired(now: Date) {
        loadIndexIfNeeded()
        for (digest, entry) in index {
            let expiry: Date?
            if let known = entry.expiry {
                expiry = known
            } else {
                expiry = readExpiry(digest)
            }
            if let expiry, expiry <= now { discard(digest, path: path(for: digest)) }
        }
    }

    public func removeAll() {
        scan()
        for digest in Array(index.keys) { discard(digest, path: path(for: digest)) }
    }

    /// Rebuilds the index from the directory now (after another process changed it, say).
    func reloadIndex() { scan() }

    // MARK: - Index

    private func loadIndexIfNeeded() {
        if !indexLoaded { scan() }
    }

    /// Lists the directory: entry files by name, size and modification time; removes temporary
    /// files left by writers that died more than ten minutes ago.
    func scan() {
        indexLoaded = true
        var fresh: [String: IndexEntry] = [:]
        var total = 0
        guard let handle = opendir(directory) else { return }
        defer { closedir(handle) }
        let descriptor = dirfd(handle)
        let staleBefore = Date().timeIntervalSince1970 - 600
        while let item = readdir(handle) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            var info = stat()
            if Self.isEntryName(name) {
                guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG
                else { continue }
                let previous = index[name]
                let modified = Self.seconds(info.st_mtim)
                let same = previous?.size == Int(info.st_size)
                let sameFile = same && previous?.inode == UInt64(info.st_ino)
                fresh[name] = IndexEntry(
                    size: Int(info.st_size), lastAccess: max(modified, previous?.lastAccess ?? 0),
                    expiry: same ? previous?.expiry : nil, identity: sameFile ? previous?.identity : nil,
                    inode: sameFile ? UInt64(info.st_ino) : 0)
                total += Int(info.st_size)
            } else if name.hasPrefix(".tmp-"), fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                Self.seconds(info.st_mtim) < staleBefore
            {
                unlinkat(descriptor, name, 0)
            }
        }
        index = fresh
        size = total
    }

    private func remember(
        _ digest: String, size entrySize: Int, lastAccess: Double, expiry: Date??, identity: Identity?, inode: UInt64
    ) {
        size += entrySize - (index[digest]?.size ?? 0)
        index[digest] = IndexEntry(
            size: entrySize, lastAccess: lastAccess, expiry: expiry, identity: identity, inode: inode)
    }

    private func forget(_ digest: String) {
        if let entry = index.removeValue(forKey: digest) { size -= entry.size }
    }

    func discard(_ digest: String, path: String) {
        unlink(path)
        forget(digest)
    }

    /// Removes a defective file, unless a writer has replaced it since it was read.
    private func discard(_ digest: String, path: String, ifStill read: stat) {
        var current = stat()
        guard lstat(path, &current) == 0 else { return forget(digest) }
        if current.st_dev == read.st_dev, current.st_ino == read.st_ino { discard(digest, path: path) }
    }

    /// Rescans (others may have written), then removes least recently used entries until the
    /// directory is at 90% of its limit.
    private func evict() {
        scan()
        guard size > options.sizeLimit else { return }
        let target = options.sizeLimit / 10 * 9
        var removed = (count: 0, bytes: 0)
        for (digest, entry) in index.sorted(by: { $0.value.lastAccess < $1.value.lastAccess }) {
            guard size > target else { break }
            discard(digest, path: path(for: digest))
            removed.count += 1
            removed.bytes += entry.size
        }
        if removed.count > 0 { observers.notify(.evicted(.disk, count: removed.count, bytes: removed.bytes)) }
    }

    private func readExpiry(_ digest: String) -> Date? {
        let path = path(for: digest)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var head = [UInt8](repeating: 0, count: 4096)
        let read = head.withUnsafeMutableBytes { Self.readFully(descriptor, into: $0) }
        return try? head.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(DiskEntryFile.Defect) in
            try DiskEntryFile.expiry(UnsafeRawBufferPointer(rebasing: raw[..<max(read, 0)]))
        }
    }

    // MARK: - Files

    nonisolated func path(for digest: String) -> String { "\(directory)/\(digest)" }

    private func syncDirectory() {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            _ = fsync(descriptor)
            close(descriptor)
        }
    }

    private nonisolated func fileError(_ operation: String, _ path: String) -> ServiceError {
        let code = errno
        return ServiceError(
            .fileAccess,
            "Disk cache could not \(operation) \(path): \(String(cString: strerror(code))) (errno \(code)).")
    }
}
