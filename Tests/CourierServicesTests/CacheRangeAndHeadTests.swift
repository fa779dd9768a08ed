import CourierServices
import CourierTestServer
import Foundation
import HTTPTypes
import Testing

@Suite("Range requests and HEAD through the cache (RFC 9111, sections 3.3, 4.3.2 and 4.3.5)")
struct CacheRangeAndHeadTests {
    @Test("a stored 200 answers bytes=a-b, a- and -n with a 206 and Content-Range")
    func rangeFromStoredResponse() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(baseURL: server.baseURL, key: "range", query: ["cc": "max-age=600"])
            let full = try await resource.load(using: coordinator)
            let cases = [
                ("bytes=0-9", 0, full.prefix(10)), ("bytes=5-", 5, full.dropFirst(5)),
                ("bytes=-4", full.count - 4, full.suffix(4)),
            ]
            for (range, first, part) in cases {
                var ranged = resource
                ranged.headers[.range] = range
                let loaded = try await ranged.loadResponse(using: coordinator)
                #expect(loaded.source == .memory && loaded.response.status.code == 206)
                #expect(loaded.value == Data(part))
                #expect(
                    loaded.response.headerFields[.contentRange]
                        == "bytes \(first)-\(first + part.count - 1)/\(full.count)")
            }
            #expect(server.cacheCounts("range").requests == 1)
            // What the cache does not answer (unsatisfiable, several ranges) goes to the server.
            for range in ["bytes=5000-", "bytes=0-1,4-5"] {
                var ranged = resource
                ranged.headers[.range] = range
                #expect(try await ranged.loadResponse(using: coordinator).source == .network)
            }
            let whole = try await resource.loadResponse(using: coordinator)
            #expect(whole.source == .memory && whole.response.status.code == 200 && whole.value.count == full.count)
        }
    }

    @Test("a 206 without a strong ETag is passed on, never stored nor served as the full response")
    func partialFromNetwork() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "range-206", query: ["cc": "max-age=600", "range": "1"])
            var ranged = resource
            ranged.headers[.range] = "bytes=0-4"
            let part = try await ranged.loadResponse(using: coordinator)
            #expect(part.response.status.code == 206 && part.value.count == 5 && part.source == .network)
            let full = try await resource.loadResponse(using: coordinator)
            #expect(full.source == .network && full.response.status.code == 200 && full.value.count > 5)
            #expect(try await resource.loadResponse(using: coordinator).source == .memory)
        }
    }

    @Test("a 206 with a strong ETag is stored as a part: it answers the ranges it holds, and parts combine")
    func partsAreStoredAndCombined() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "parts",
                query: ["cc": "max-age=600", "etag": "1", "range": "1", "stable": "1"])
            func load(_ range: String?, method: HTTPRequest.Method = .get) async throws -> Loaded<Data> {
                var ranged = resource
                ranged.headers[.range] = range
                ranged.method = method
                return try await ranged.loadResponse(using: coordinator)
            }
            let head = try await load("bytes=0-9")
            #expect(head.source == .network && head.response.status.code == 206 && head.value.count == 10)
            let total = try #require(
                head.response.headerFields[.contentRange]?.split(separator: "/").last.flatMap { Int($0) })
            let inner = try await load("bytes=2-5")
            #expect(inner.source == .memory && inner.response.status.code == 206)
            #expect(inner.value == Data(head.value.dropFirst(2).prefix(4)))
            #expect(inner.response.headerFields[.contentRange] == "bytes 2-5/\(total)")
            // Neither a plain HEAD nor a range the part does not hold is answered from it.
            #expect(try await load(nil, method: .head).source == .network)
            let tail = try await load("bytes=8-")
            #expect(tail.source == .network && tail.value.count == total - 8)
            #expect(server.cacheCounts("parts").requests == 3)
            // The two parts overlap: together they are the whole, a 200 from memory.
            let whole = try await load(nil)
            #expect(whole.source == .memory && whole.response.status.code == 200)
            #expect(whole.value == Data(head.value.prefix(8)) + tail.value)
            #expect(whole.response.headerFields[.contentRange] == nil)
            #expect(server.cacheCounts("parts").requests == 3)
        }
    }

    @Test("a part of another version replaces the stored part; a plain load never gets a part")
    func partsOfAnotherVersion() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            func load(_ key: String, _ range: String?) async throws -> Loaded<Data> {
                var resource = RawCachedResource(
                    baseURL: server.baseURL, key: key,
                    query: ["cc": "max-age=600", "etag": "1", "range": "1", "stable": "1"])
                resource.headers[.range] = range
                return try await resource.loadResponse(using: coordinator)
            }
            _ = try await load("plain", "bytes=0-9")
            let plain = try await load("plain", nil)
            #expect(plain.source == .network && plain.response.status.code == 200)
            #expect(try await load("plain", "bytes=20-").source == .memory)  // from the stored 200

            _ = try await load("versions", "bytes=0-9")
            server.setCacheVersion("versions", 2)
            let newer = try await load("versions", "bytes=5-")
            #expect(newer.source == .network && newer.response.headerFields[.eTag] == "\"v2\"")
            // 0-4 of version 1 is gone (not combined with another ETag): 0-9 goes out, and its
            // part of version 2 completes the other.
            #expect(try await load("versions", "bytes=0-9").source == .network)
            let whole = try await load("versions", nil)
            #expect(whole.source == .memory && whole.response.status.code == 200)
            let text = String(decoding: whole.value, as: UTF8.self)
            #expect(text.hasPrefix("{") && text.hasSuffix("}") && text.contains(#""version":2,"#))
            #expect(server.cacheCounts("versions").requests == 3)
        }
    }

    @Test("a HEAD is answered from the fresh stored GET, with no request")
    func headFromStoredGet() async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let get = RawCachedResource(
                baseURL: server.baseURL, key: "head", query: ["cc": "max-age=600", "etag": "1"])
            _ = try await get.load(using: coordinator)
            var head = get
            head.method = .head
            let answered = try await head.loadResponse(using: coordinator)
            #expect(answered.source == .memory && answered.response.status.code == 200 && answered.value.isEmpty)
            #expect(answered.response.headerFields[.eTag] == "\"v1\"")
            #expect(server.cacheCounts("head").requests == 1)
        }
    }

    @Test("a HEAD's 200 freshens a stale stored GET that has no validators")
    func headFreshensGetWithoutValidators() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let get = RawCachedResource(baseURL: server.baseURL, key: "head-nv")
            server.setCacheControl("head-nv", "max-age=10")
            let stored = try await get.load(using: coordinator)
            clock.advance(60)
            server.setCacheControl("head-nv", "max-age=600")
            var head = get
            head.method = .head
            #expect(try await head.loadResponse(using: coordinator).source == .network)
            let fresh = try await get.loadResponse(using: coordinator)
            #expect(fresh.source == .memory && !fresh.isStale && fresh.value == stored)
            #expect(server.cacheCounts("head-nv").requests == 2)
        }
    }

    @Test("a HEAD's 200 freshens the stored GET; one with another ETag removes it")
    func headFreshensGet() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let get = RawCachedResource(baseURL: server.baseURL, key: "head-fresh", query: ["etag": "1"])
            server.setCacheControl("head-fresh", "max-age=0")
            let stored = try await get.load(using: coordinator)
            server.setCacheControl("head-fresh", "max-age=600")
            var head = get
            head.method = .head
            #expect(try await head.loadResponse(using: coordinator).source == .network)
            let fresh = try await get.loadResponse(using: coordinator)
            #expect(fresh.source == .memory && fresh.value == stored)
            #expect(fresh.response.headerFields[.cacheControl] == "max-age=600")
            #expect(server.cacheCounts("head-fresh") == (2, 0))

            clock.advance(601)
            server.setCacheVersion("head-fresh", 2)
            _ = try await head.load(using: coordinator)
            let changed = try await get.loadResponse(using: coordinator)
            #expect(changed.source == .network)
            #expect(server.requests(to: "/cache?key=head-fresh").last?.header("If-None-Match") == nil)
        }
    }
}
