import CourierCaching
import CourierCore
import Foundation
import HTTPTypes
import Synchronization
import Testing

@Suite("Purges by URL and tag, hard and soft")
struct CachePurgeTests {
    static let start = Date(timeIntervalSince1970: 1_764_000_000)

    /// A response stored at `start`, with `fields` besides a validator.
    static func response(_ body: String = "v1", _ fields: HTTPFields = [:]) -> CachedResponse {
        var headerFields: HTTPFields = [.eTag: "\"\(body)\""]
        headerFields.append(contentsOf: fields)
        return CachedResponse(
            status: .ok, headerFields: headerFields, body: Data(body.utf8), requestTime: start, responseTime: start)
    }

    static func fields(_ pairs: KeyValuePairs<String, String>) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test("tags come from Surrogate-Key (spaces) and Cache-Tag (commas); malformed and repeated ones are ignored")
    func tags() {
        let long = String(repeating: "t", count: 1_025)
        let response = Self.response(
            "v1",
            Self.fields([
                "Surrogate-Key": "  product-7 catalog\tproduct-7 ", "Cache-Tag": "shelf-3, catalog ,,\(long),zone é",
            ]))
        #expect(response.tags == ["product-7", "catalog", "shelf-3"])
        #expect(Self.response().tags.isEmpty)
        #expect(PurgeTarget.isValidTag("a"))
        #expect(!PurgeTarget.isValidTag("") && !PurgeTarget.isValidTag("a,b") && !PurgeTarget.isValidTag("a b"))
    }

    @Test("a purge's URL is read as requests write it: lower-case scheme, / for no path, no fragment")
    func urls() {
        #expect(
            PurgeTarget.normalizedURL("HTTPS://api.example.com/v1/p?id=7#top") == "https://api.example.com/v1/p?id=7")
        #expect(PurgeTarget.normalizedURL("http://api.example.com") == "http://api.example.com/")
        #expect(PurgeTarget.normalizedURL("http://api.example.com:8080?x=1") == "http://api.example.com:8080/?x=1")
        for bad in ["ftp://host/file", "/relative/path", "https:///nohost", "https://host/a b", ""] {
            #expect(PurgeTarget.normalizedURL(bad) == nil, "\(bad)")
        }
        let key = CacheKey("HEAD https://api.example.com/v1/p?id=7 credentials=abc")
        #expect(key.url == "https://api.example.com/v1/p?id=7")
    }

    @Test("purge(url:) removes every method's and every user's entry of the URL, and nothing else")
    func purgeByURL() async throws {
        let cache = TieredCache(now: { Self.start })
        let url = "https://api.example.com/v1/products/7"
        let purged = ["GET \(url)", "HEAD \(url)", "GET \(url) credentials=0123"].map(CacheKey.init)
        let kept = ["GET \(url)?page=2", "GET https://api.example.com/v1/products/70"].map(CacheKey.init)
        for key in purged + kept { await cache.store(Self.response(), for: key, in: .all) }
        let events = Mutex<[String]>([])
        cache.observers.add { event in events.withLock { $0.append("\(event.name) \(event.count ?? -1)") } }

        #expect(try await cache.purge(url: "HTTPS://api.example.com/v1/products/7#reviews") == 3)
        for key in purged { #expect(await cache.lookup(key) == nil) }
        for key in kept { #expect(await cache.lookup(key)?.tier == .memory) }
        #expect(events.withLock { $0 } == ["purged 3"])
        #expect(try await cache.purge(url: url) == 0)
    }

    @Test("purge(tag:) removes the entries whose response named the tag")
    func purgeByTag() async throws {
        let cache = TieredCache(now: { Self.start })
        let a = CacheKey("GET https://api.example.com/a")
        let b = CacheKey("GET https://api.example.com/b")
        let c = CacheKey("GET https://api.example.com/c")
        await cache.store(Self.response("a", Self.fields(["Surrogate-Key": "product-7 catalog"])), for: a, in: .all)
        await cache.store(Self.response("b", Self.fields(["Cache-Tag": "catalog,shelf"])), for: b, in: .all)
        await cache.store(Self.response("c", Self.fields(["Surrogate-Key": "product-70"])), for: c, in: .all)
        #expect(try await cache.purge(tag: "catalog") == 2)
        #expect(await cache.lookup(a) == nil)
        #expect(await cache.lookup(b) == nil)
        #expect(await cache.lookup(c) != nil)
    }

    @Test("a purge with a bad URL or tag throws invalidRequest and removes nothing")
    func badInput() async throws {
        let cache = TieredCache(now: { Self.start })
        let key = CacheKey("GET https://api.example.com/a")
        await cache.store(Self.response("a", Self.fields(["Surrogate-Key": "a"])), for: key, in: .all)
        for url in ["api.example.com/a", "ftp://api.example.com/a"] {
            let error = await #expect(throws: ServiceError.self) { try await cache.purge(url: url) }
            #expect(error?.code == .invalidRequest)
        }
        for tag in ["", "a,b", "a b", String(repeating: "x", count: 1_025)] {
            let error = await #expect(throws: ServiceError.self) { try await cache.purge(tag: tag) }
            #expect(error?.code == .invalidRequest)
        }
        #expect(await cache.lookup(key) != nil)
    }

    @Test("a soft purge keeps the entry but ends its freshness at the purge: stale windows count from there")
    func softPurgeFreshness() async throws {
        let clock = Mutex(Self.start)
        let cache = TieredCache(now: { clock.withLock { $0 } })
        let key = CacheKey("GET https://api.example.com/a")
        let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/a")
        await cache.store(
            Self.response("a", [.cacheControl: "max-age=600, stale-while-revalidate=30"]), for: key, in: .all)
        clock.withLock { $0 = Self.start + 100 }
        #expect(try await cache.purge(url: "https://api.example.com/a", soft: true) == 1)
        let entry = try #require(await cache.lookup(key)?.response)
        #expect(entry.purgedAt == Self.start + 100)
        #expect(!HTTPCacheRules.freshness(of: entry, now: Self.start + 100).isFresh)
        #expect(HTTPCacheRules.decide(entry, for: request, now: Self.start + 120) == .staleWhileRevalidate)
        #expect(HTTPCacheRules.decide(entry, for: request, now: Self.start + 131) == .revalidate)
        // Again later: the first mark stays (the stale window does not move).
        clock.withLock { $0 = Self.start + 200 }
        _ = try await cache.purge(url: "https://api.example.com/a", soft: true)
        #expect(await cache.lookup(key)?.response.purgedAt == Self.start + 100)
        // A response requested before the purge keeps the mark in memory; a mark older than
        // the request counts for nothing.
        var raced = Self.response("a2", [.cacheControl: "max-age=600"])
        raced.requestTime = Self.start + 50
        await cache.store(raced, for: key, in: .all)
        let kept = try #require(await cache.lookup(key)?.response)
        #expect(kept.purgedAt == Self.start + 100 && kept.effectivePurge == Self.start + 100)
        var later = raced
        later.requestTime = Self.start + 150
        later.purgedAt = Self.start + 100
        #expect(later.effectivePurge == nil)
        #expect(HTTPCacheRules.freshness(of: later, now: Self.start + 160).isFresh)
        // A 304 makes it fresh again.
        let revalidated = HTTPCacheRules.freshened(
            entry, with: HTTPResponse(status: .notModified), requestTime: Self.start + 200,
            responseTime: Self.start + 200)
        #expect(revalidated.purgedAt == nil)
        #expect(HTTPCacheRules.freshness(of: revalidated, now: Self.start + 201).isFresh)
    }

    @Test("a disk cache purges entries another instance wrote (read from their files), and keeps a soft mark")
    func diskPurge() async throws {
        let directory = NSTemporaryDirectory() + "courier-purge-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let a = CacheKey("GET https://api.example.com/a")
        let b = CacheKey("GET https://api.example.com/b credentials=0123")
        let c = CacheKey("GET https://api.example.com/c")
        let writer = try DiskCache(directory: directory)
        try await writer.store(Self.response("a", Self.fields(["Surrogate-Key": "red"])), for: a)
        try await writer.store(Self.response("b", Self.fields(["Surrogate-Key": "red blue"])), for: b)
        try await writer.store(Self.response("c", Self.fields(["Cache-Tag": "blue"])), for: c)

        // Another instance on the directory: it knows no entry's key or tags yet.
        let disk = try DiskCache(directory: directory)
        let cache = TieredCache(stores: [disk], now: { Self.start + 10 })
        #expect(try await cache.purge(tag: "red") == 2)
        #expect(try await disk.entry(for: a) == nil)
        #expect(try await disk.entry(for: b) == nil)
        #expect(try await disk.entry(for: c) != nil)

        #expect(try await cache.purge(tag: "blue", soft: true) == 1)
        let reopened = try DiskCache(directory: directory)
        let marked = try #require(try await reopened.entry(for: c))
        #expect(marked.purgedAt == Self.start + 10)
        #expect(marked.body == Data("c".utf8))
        #expect(try await cache.purge(url: "https://api.example.com/c") == 1)
        #expect(try await reopened.entry(for: c) == nil)
    }

    @Test(
        "a lookup that reads a store while a purge runs, or until after it, copies nothing to memory",
        .timeLimit(.minutes(3)))
    func lookupsDuringAPurge() async throws {
        let url = "https://api.example.com/slow"
        let get = CacheKey("GET \(url)")
        let head = CacheKey("HEAD \(url)")
        let store = PlainStore(gated: true)
        try await store.store(Self.response(), for: get)
        try await store.store(Self.response(), for: head)
        let cache = TieredCache(stores: [store], now: { Self.start })
        // Each read returns what the store held when it began, once the test lets it go.
        async let purged = cache.purge(url: url)
        try await store.waitForReads([get])  // the purge reads GET
        async let during = cache.lookup(get)
        try await store.waitForReads([get, get])
        store.letGo(get)  // the purge removes GET, then reads HEAD
        try await store.waitForReads([get, head])
        store.letGo(get)
        let readDuring = await during  // returned while the purge runs
        async let after = cache.lookup(head)
        try await store.waitForReads([head, head])
        store.letGo(head)  // the purge's read: it removes HEAD and ends
        #expect(try await purged == 2)
        store.letGo(head)
        let readAfter = await after  // began during the purge, returned after it
        #expect(readDuring != nil)  // what the store held when each read began
        #expect(readAfter != nil)
        #expect(await cache.lookup(get, in: .memory) == nil)
        #expect(await cache.lookup(head, in: .memory) == nil)
        #expect(store.count == 0)
    }

    @Test(
        "a store that cannot purge loses a URL's plain GET and HEAD entries; a failing store's error is thrown after the others"
    )
    func plainStores() async throws {
        let store = PlainStore()
        let failing = PlainStore(fails: true)
        let url = "https://api.example.com/a"
        for key in ["GET \(url)", "HEAD \(url)", "GET \(url) credentials=0123"].map(CacheKey.init) {
            try await store.store(Self.response(), for: key)
        }
        let cache = TieredCache(stores: [store], now: { Self.start })
        #expect(try await cache.purge(url: url) == 2)
        #expect(store.count == 1)  // the user's entry: only a purging store finds it

        let failingCache = TieredCache(stores: [failing, store], now: { Self.start })
        try await store.store(Self.response(), for: CacheKey("GET \(url)"))
        let error = await #expect(throws: ServiceError.self) { try await failingCache.purge(url: url) }
        #expect(error?.code == .fileAccess)
        #expect(store.count == 1)  // purged all the same
    }
}

/// A store without purging of its own (one a user wrote); `fails` makes every call throw. When
/// `gated`, a read takes what the store holds when it begins, then waits for `letGo(_:)`.
private final class PlainStore: CacheStore {
    private struct Read {
        let key: CacheKey
        let resume: CheckedContinuation<Void, Never>
    }
    // LockedValue, not Mutex: ThreadSanitizer sees its lock (the test task polls what reads write).
    private let entries = LockedValue<[CacheKey: CachedResponse]>([:])
    private let reads = LockedValue<[Read]>([])
    private let opened = LockedValue(false)
    let fails: Bool
    let gated: Bool
    init(fails: Bool = false, gated: Bool = false) {
        self.fails = fails
        self.gated = gated
    }
    var count: Int { entries.withLock { $0.count } }
    func check() throws { if fails { throw ServiceError(.fileAccess, "The test store fails.") } }
    func entry(for key: CacheKey) async throws -> CachedResponse? {
        try check()
        let found = entries.withLock { $0[key] }
        if gated {
            await withCheckedContinuation { resume in
                let wait = opened.withLock { opened in
                    if !opened { reads.withLock { $0.append(Read(key: key, resume: resume)) } }
                    return !opened
                }
                if !wait { resume.resume() }
            }
        }
        return found
    }

    /// Waits (60 s at most: sanitizers on a busy machine) until the reads waiting are `keys`, in
    /// order; past that, records an issue, lets every read go (now and later) and throws.
    func waitForReads(_ keys: [CacheKey]) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while reads.withLock({ $0.map(\.key) }) != keys {
            guard ContinuousClock.now < deadline else {
                Issue.record("reads waiting: \(reads.withLock { $0.map(\.key) }), expected \(keys)")
                let waiting = opened.withLock { opened in
                    opened = true
                    return reads.withLock { reads in
                        defer { reads.removeAll() }
                        return reads
                    }
                }
                for read in waiting { read.resume.resume() }
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Lets the oldest waiting read of `key` return.
    func letGo(_ key: CacheKey) {
        let read = reads.withLock { reads in reads.firstIndex { $0.key == key }.map { reads.remove(at: $0) } }
        read?.resume.resume()
    }
    func store(_ response: CachedResponse, for key: CacheKey) async throws {
        try check()
        entries.withLock { $0[key] = response }
    }
    func removeEntry(for key: CacheKey) async throws {
        try check()
        entries.withLock { _ = $0.removeValue(forKey: key) }
    }
    func removeExpired(now: Date) async throws {}
    func removeAll() async throws { entries.withLock { $0.removeAll() } }
}
