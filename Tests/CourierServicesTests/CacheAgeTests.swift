import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("Age on responses served from the cache (RFC 9111, sections 4.2.3 and 5.1)")
struct CacheAgeTests {
    @Test("a stored response carries an Age grown by its time in the cache; Loaded has age and storedAt")
    func generatedAge() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "age-gen", query: ["cc": "max-age=600", "date": "none"])
            let stored = clock.now
            let first = try await resource.loadResponse(using: coordinator)
            #expect(first.age == nil && first.storedAt == nil && first.response.headerFields[.age] == nil)
            clock.advance(30)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.source == .memory)
            #expect(second.response.headerFields[.age] == "30")
            #expect(second.age == .seconds(30))
            #expect(second.storedAt == stored)
        }
    }

    @Test("the Age the server sent is the starting point")
    func ageFromServer() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "age-srv", query: ["cc": "max-age=600", "date": "none", "age": "50"])
            _ = try await resource.load(using: coordinator)
            clock.advance(8)
            let cached = try await resource.loadResponse(using: coordinator)
            #expect(cached.response.headerFields[values: .age] == ["58"])
            #expect(cached.age == .seconds(58))
        }
    }

    @Test(
        "a list-valued Age counts its first member; an invalid one is ignored",
        arguments: [
            (["age": "7200, 0"], false), (["age": "7200", "age2": "0"], false), (["age": "100s"], true),
            (["age": "1.5"], true),
        ])
    func listAge(fields: [String: String], fresh: Bool) async throws {
        try await withCachingCoordinator { server, coordinator, _ in
            let key = "age-list-\(fields.values.sorted().joined())"
            let resource = CachedResource(
                baseURL: server.baseURL, key: key, query: fields.merging(["cc": "max-age=3600"]) { $1 })
            _ = try await resource.load(using: coordinator)
            let second = try await resource.loadResponse(using: coordinator)
            #expect(second.source == (fresh ? .memory : .network))
        }
    }

    @Test("a revalidated response's age starts again from the 304")
    func ageAfterRevalidation() async throws {
        try await withCachingCoordinator { server, coordinator, clock in
            let resource = CachedResource(
                baseURL: server.baseURL, key: "age-304", query: ["cc": "max-age=10", "etag": "1", "date": "none"])
            _ = try await resource.load(using: coordinator)
            clock.advance(100)
            let revalidated = try await resource.loadResponse(using: coordinator)
            #expect(revalidated.source == .revalidated && revalidated.age == .zero)
            #expect(revalidated.storedAt == clock.now)
            clock.advance(4)
            #expect(try await resource.loadResponse(using: coordinator).response.headerFields[.age] == "4")
        }
    }
}
