import CourierCaching
import CourierCore
import CourierTestServer
import Foundation
import Testing

/// A fresh directory under the system's temporary directory, removed after `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

func sampleResponse(_ text: String, bytes: Int = 0, at time: Date = Date(timeIntervalSince1970: 1_700_000_000))
    -> CachedResponse
{
    var body = Data(text.utf8)
    if bytes > body.count { body.append(Data(repeating: UInt8(ascii: "."), count: bytes - body.count)) }
    return CachedResponse(
        status: 200, headerFields: [.contentType: "application/json", .eTag: "\"\(text.count)\""], body: body,
        requestTime: time, responseTime: time + 0.25, variant: "abc")
}

/// The entry files (not temporary files) in `directory`.
func entryFiles(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.count == 64 }.sorted()
}

@Suite("DiskCache")
struct DiskCacheTests {
    /// Entries read on the caller's thread (the default limit) and on the cache's queue (limit 0).
    static let readPaths = [DiskCache.Options().inlineReadLimit, 0]

    /// Each way of reading and writing an entry: reads on the caller's thread and on the queue,
    /// and synchronous writes (whose `fsync` no test can see: this shows they still round-trip).
    static let roundTripOptions =
        readPaths.map { DiskCache.Options(inlineReadLimit: $0) } + [
            DiskCache.Options(synchronousWrites: true)
        ]

    @Test("round trip, also through a new instance on the same directory", arguments: roundTripOptions)
    func roundTrip(options: DiskCache.Options) async throws {
        try await withTemporaryDirectory { directory in
            let key = CacheKey("GET https://example.com/a?b=1")
            let stored = sampleResponse(#"{"a":1}"#, bytes: 20_000)
            let cache = try DiskCache(directory: directory, options: options)
            try await cache.store(stored, for: key)
            #expect(try await cache.entry(for: key) == stored)
            #expect(try await cache.entry(for: CacheKey("GET https://example.com/other")) == nil)
            let reopened = try DiskCache(directory: directory, options: options)
            #expect(await reopened.count == 1)
            #expect(try await reopened.entry(for: key) == stored)
            #expect(entryFiles(directory) == [key.digest])
        }
    }

    @Test("the directory is 0700 and entries 0600")
    func permissions() async throws {
        try await withTemporaryDirectory { directory in
            let nested = directory + "/a/b"
            let cache = try DiskCache(directory: nested)
            try await cache.store(sampleResponse("x"), for: CacheKey("k"))
            let attributes = try FileManager.default.attributesOfItem(atPath: nested)
            #expect((attributes[.posixPermissions] as? Int) == 0o700)
            let file = try FileManager.default.attributesOfItem(atPath: nested + "/" + CacheKey("k").digest)
            #expect((file[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test(
        "truncated, flipped, older-format and empty files are misses and are removed",
        arguments: ["truncate", "flip-body", "flip-metadata", "older-format", "empty", "garbage"], readPaths)
    func tornEntries(damage: String, inlineReadLimit: Int) async throws {
        try await withTemporaryDirectory { directory in
            let key = CacheKey("GET https://example.com/torn")
            let cache = try DiskCache(directory: directory, options: .init(inlineReadLimit: inlineReadLimit))
            try await cache.store(sampleResponse("hello world", bytes: 4_000), for: key)
            let path = directory + "/" + key.digest
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            switch damage {
            case "truncate": bytes.removeLast(100)
            case "flip-body": bytes[bytes.count - 10] ^= 0x01
            case "flip-metadata": bytes[40] ^= 0x20
            case "older-format": bytes[4] = 0
            case "empty": bytes = []
            default: bytes = Array("not a cache entry at all, but a file with our kind of name".utf8)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try await cache.entry(for: key) == nil)
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(await cache.count == 0)
        }
    }

    @Test("files that are not ours are left alone")
    func foreignFiles() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try DiskCache(directory: directory)
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: directory + "/README"))
            try await cache.store(sampleResponse("x"), for: CacheKey("k"))
            await cache.removeAll()
            #expect(FileManager.default.fileExists(atPath: directory + "/README"))
            #expect(entryFiles(directory).isEmpty)
        }
    }

    @Test("eviction keeps the directory under its limit, least recently used first")
    func eviction() async throws {
        try await withTemporaryDirectory { directory in
            let events = EventLog()
            let cache = try DiskCache(directory: directory, options: .init(sizeLimit: 120_000))
            cache.observers.add { events.append($0) }
            for index in 0..<11 {
                try await cache.store(sampleResponse("entry \(index)", bytes: 10_000), for: CacheKey("k\(index)"))
            }
            // Touch k0 so that k1 becomes the oldest.
            #expect(try await cache.entry(for: CacheKey("k0")) != nil)
            try await cache.store(sampleResponse("entry 11", bytes: 10_000), for: CacheKey("k11"))
            let onDisk = entryFiles(directory).reduce(0) { total, name in
                total
                    + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? Int) ?? 0)
            }
            #expect(onDisk <= 120_000)
            #expect(await cache.totalSize == onDisk)
            #expect(try await cache.entry(for: CacheKey("k0")) != nil)
            #expect(try await cache.entry(for: CacheKey("k1")) == nil)
            #expect(try await cache.entry(for: CacheKey("k2")) == nil)
            #expect(try await cache.entry(for: CacheKey("k11")) != nil)
            #expect(events.events.contains { $0.name == .evicted && $0.tier == .disk && ($0.count ?? 0) >= 1 })
        }
    }

    @Test("a huge file under an entry's name is removed without being read into memory")
    func hugeForeignFile() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try DiskCache(directory: directory, options: .init(sizeLimit: 1 << 20))
            let key = CacheKey("GET https://example.com/huge")
            let path = directory + "/" + key.digest
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.truncate(atOffset: 1 << 40)  // a sparse terabyte
            try handle.close()
            #expect(try await cache.entry(for: key) == nil)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("an entry larger than an eighth of the limit is not stored")
    func oversizedEntries() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try DiskCache(directory: directory, options: .init(sizeLimit: 80_000))
            try await cache.store(sampleResponse("small"), for: CacheKey("k"))
            try await cache.store(sampleResponse("big", bytes: 20_000), for: CacheKey("k"))
            #expect(try await cache.entry(for: CacheKey("k")) == nil)
            #expect(entryFiles(directory).isEmpty)
        }
    }

    @Test("expired entries are removed, including ones found by a scan")
    func removeExpired() async throws {
        try await withTemporaryDirectory { directory in
            let now = Date(timeIntervalSince1970: 1_700_000_000)
            let cache = try DiskCache(directory: directory)
            var short = sampleResponse("short")
            short.expiresAt = now + 10
            try await cache.store(short, for: CacheKey("short"))
            try await cache.store(sampleResponse("kept"), for: CacheKey("kept"))
            let reopened = try DiskCache(directory: directory)
            await reopened.removeExpired(now: now + 5)
            #expect(await reopened.count == 2)
            await reopened.removeExpired(now: now + 10)
            #expect(await reopened.count == 1)
            #expect(try await reopened.entry(for: CacheKey("kept")) != nil)
        }
    }

    @Test("two instances writing the same keys concurrently leave only whole entries")
    func twoInstances() async throws {
        try await withTemporaryDirectory { directory in
            let first = try DiskCache(directory: directory)
            let second = try DiskCache(directory: directory)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, cache) in [first, second].enumerated() {
                    group.addTask {
                        for round in 0..<200 {
                            let key = CacheKey("k\(round % 10)")
                            try await cache.store(
                                sampleResponse("writer \(writer) round \(round)", bytes: 20_000), for: key)
                            if let read = try await cache.entry(for: key) {
                                #expect(String(decoding: read.body.prefix(6), as: UTF8.self) == "writer")
                                #expect(read.body.count == 20_000)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let reader = try DiskCache(directory: directory)
            for index in 0..<10 {
                let entry = try await reader.entry(for: CacheKey("k\(index)"))
                #expect(entry?.body.count == 20_000)
            }
            #expect(entryFiles(directory).count == 10)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
                $0.hasPrefix(".tmp-")
            }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("a writer process killed mid-write leaves a valid cache")
    func killedWriter() async throws {
        try await withTemporaryDirectory { directory in
            let executable = URL(fileURLWithPath: CommandLine.testProductsDirectory).appendingPathComponent(
                "courier-cache-writer")
            for round in 0..<3 {
                let output = OutputPipe()
                let writer = try ChildProcess.spawn(
                    executable.path, [directory, "8", "\(200_000 + round * 50_000)", "\(getpid())"],
                    standardOutput: output.writeEnd)
                output.closeWriteEnd()
                // Wait for the first complete write, let it run on, then kill it without warning.
                #expect(await output.line() == Array("ready\n".utf8))
                try await Task.sleep(for: .milliseconds(30 + round * 20))
                kill(writer.pid, SIGKILL)
                #expect(await writer.exit() == 128 + SIGKILL)
            }
            let cache = try DiskCache(directory: directory)
            var found = 0
            for index in 0..<8 {
                guard let entry = try await cache.entry(for: CacheKey("GET http://writer/\(index)")) else { continue }
                found += 1
                let text = String(decoding: entry.body.prefix(40), as: UTF8.self)
                #expect(text.hasPrefix("\(index):"))
            }
            #expect(found >= 1)
            #expect(entryFiles(directory).count == found)
        }
    }

    @Test("a writer whose parent died stops writing (a crashed test run leaves no writer behind)")
    func orphanedWriterExits() async throws {
        try await withTemporaryDirectory { directory in
            let executable = URL(fileURLWithPath: CommandLine.testProductsDirectory).appendingPathComponent(
                "courier-cache-writer")
            // A shell starts the writer (naming itself as the parent to watch), prints the writer's
            // pid and exits at once: the writer's parent is gone, during its start-up or after.
            let output = OutputPipe()
            let shell = try ChildProcess.spawn(
                "/bin/sh", ["-c", "\"$0\" \"$1\" 8 1000 $$ & echo $!", executable.path, directory],
                standardOutput: output.writeEnd)
            output.closeWriteEnd()
            let line = await output.line()
            let pid = try #require(
                Int32(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await shell.exit() == 0)
            // It ran: its first entry is written whatever happened to its parent.
            #expect(await output.line() == Array("ready\n".utf8))
            // Gone, a zombie nobody reaped yet, or its pid taken by another program: it runs no more.
            func isRunning() -> Bool {
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
                else { return false }
                let name = stat[stat.index(after: open)..<close]
                return name == "courier-cache-w" && !stat[close...].hasPrefix(") Z") && !stat[close...].hasPrefix(") X")
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while isRunning(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let running = isRunning()
            if running { kill(pid, SIGKILL) }
            #expect(!running)
        }
    }
}

/// Collects cache events from any thread.
final class EventLog: Sendable {
    private let storage = LockedValue<[CacheEvent]>([])
    func append(_ event: CacheEvent) { storage.withLock { $0.append(event) } }
    var events: [CacheEvent] { storage.withLock { $0 } }
}
