#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

@Suite("PostgreSQL cache tier under a coordinator", postgresAvailable)
struct PostgresTierLoadTests {
    @Test("one user's entry in the shared tier is never served to another")
    func credentialPartitions() async throws {
        try await withPostgresStore { _, store in
            try await withSharedTierCoordinator(store: store) { server, coordinator in
                func load(_ user: String) async throws -> Loaded<Data> {
                    try await CacheRouteResource(
                        baseURL: server.baseURL, key: "me", headers: [.authorization: "Bearer \(user)"]
                    ).loadResponse(using: coordinator)
                }
                let alice = try await load("alice")
                #expect(alice.source == .network && alice.text.contains(#""served":1"#))
                #expect(try await load("alice").source == .shared)
                let bob = try await load("bob")
                #expect(bob.source == .network && bob.text.contains(#""served":2"#))
                let again = try await load("alice")
                #expect(again.source == .shared && again.value == alice.value)
                #expect(try await load("bob").value == bob.value)
                #expect(server.cacheCounts("me").requests == 2)
            }
        }
    }

    @Test("a response that varies on Accept-Language is never served for another language")
    func varyKeptApart() async throws {
        try await withPostgresStore { _, store in
            try await withSharedTierCoordinator(store: store) { server, coordinator in
                func load(_ language: String) async throws -> Loaded<Data> {
                    try await CacheRouteResource(
                        baseURL: server.baseURL, key: "page", query: ["cc": "max-age=600", "vary": "Accept-Language"],
                        headers: [.acceptLanguage: language], cachePolicy: .http(tiers: .shared)
                    ).loadResponse(using: coordinator)
                }
                let english = try await load("en")
                #expect(english.source == .network && english.text.contains(#""lang":"en""#))
                let cached = try await load("en")
                #expect(cached.source == .shared && cached.value == english.value)
                let french = try await load("fr")
                #expect(french.source != .shared && french.text.contains(#""lang":"fr""#))
                #expect(try await load("fr").text.contains(#""lang":"fr""#))
                #expect(try await load("en").text.contains(#""lang":"en""#))
            }
        }
    }
}
#endif
