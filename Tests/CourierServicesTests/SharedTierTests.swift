import CourierCore
import CourierServices
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Under `CachePolicy.http`, the tier a fleet shares acts as a shared cache while memory and
/// disk keep a private cache's rules.
@Suite struct SharedTierTests {
    struct Page: Resource {
        typealias Response = Data
        var token: String?
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/page") }
        var headers: HTTPFields { token.map { [.authorization: "Bearer \($0)"] } ?? [:] }
        var cachePolicy: CachePolicy { .http() }
    }

    /// A coordinator whose cache is memory in front of `store`, answering `/page` with
    /// `Cache-Control: control`, on a wall clock `offset` ahead.
    static func coordinator(
        _ store: LeasingTestStore, control: String, offset: TimeInterval = 0
    ) -> (RequestCoordinator, MockTransport) {
        let mock = MockTransport()
        mock.respond(to: .get, "/page", with: .json("{}", headers: [.cacheControl: control, .eTag: #""v1""#]))
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(stores: [store])
        configuration.now = { Date() + offset }
        return (RequestCoordinator(transport: mock, configuration: configuration), mock)
    }

    @Test func aPrivateResponseStaysOutOfTheSharedTier() async throws {
        let store = LeasingTestStore()
        let (coordinator, mock) = Self.coordinator(store, control: "private, max-age=60")
        _ = try await Page().load(using: coordinator)
        _ = try await Page().load(using: coordinator)
        #expect(mock.requestCount == 1, "memory, a private tier, keeps it")
        #expect(await store.entryCount == 0)
        await coordinator.shutdown()
    }

    @Test func anAnswerToAuthorizationIsSharedOnlyWhenItSaysSo() async throws {
        let store = LeasingTestStore()
        let (plain, _) = Self.coordinator(store, control: "max-age=60")
        _ = try await Page(token: "one").load(using: plain)
        #expect(await store.entryCount == 0, "max-age alone does not let a shared cache keep it")
        await plain.shutdown()
        let (allowing, _) = Self.coordinator(store, control: "public, max-age=60")
        _ = try await Page(token: "one").load(using: allowing)
        #expect(await store.entryCount == 1, "public does")
        await allowing.shutdown()
    }

    @Test func sMaxAgeAgesTheSharedCopySooner() async throws {
        // One instance stores the page; another, a minute later (its own memory empty), finds
        // the shared copy stale under s-maxage=30 and revalidates, where the first instance's
        // memory copy is still fresh under max-age=600.
        let store = LeasingTestStore()
        let (first, firstMock) = Self.coordinator(store, control: "max-age=600, s-maxage=30")
        _ = try await Page().load(using: first)
        #expect(await store.entryCount == 1)
        let (second, secondMock) = Self.coordinator(store, control: "max-age=600, s-maxage=30", offset: 60)
        _ = try await Page().load(using: second)
        #expect(secondMock.requestCount == 1, "the shared copy was stale for the fleet")
        let conditional = secondMock.requests.first?.request.headerFields[.ifNoneMatch]
        #expect(conditional == #""v1""#, "and revalidated with its validator")
        let (later, laterMock) = Self.coordinator(store, control: "max-age=600, s-maxage=30", offset: 2)
        _ = try await Page().load(using: later)
        #expect(laterMock.requestCount == 0, "within s-maxage, the shared copy serves")
        _ = try await Page().load(using: first)
        #expect(firstMock.requestCount == 1, "the private copy is fresh for ten minutes")
        for coordinator in [first, second, later] { await coordinator.shutdown() }
    }
}
