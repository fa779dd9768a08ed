import CourierTestServer
import CourierXML
import Foundation
import Testing

struct Feed: Decodable, Sendable {
    struct Channel: Decodable, Sendable {
        var title: String
        var link: String
        var description: String
        var item: [FeedItem]
    }
    var channel: Channel
}

struct FeedItem: Decodable, Sendable, Equatable {
    struct GUID: Decodable, Sendable, Equatable, DynamicNodeDecoding {
        var value: String
        var isPermaLink: Bool
        enum CodingKeys: String, CodingKey {
            case value = ""
            case isPermaLink
        }
        static func nodeDecoding(for key: any CodingKey) -> XMLDecoder.NodeDecoding {
            key.stringValue == CodingKeys.isPermaLink.stringValue ? .attribute : .element
        }
    }
    var title: String
    var link: String
    var guid: GUID
    var pubDate: String
    var description: String
    var category: [String]?
}

struct WholeFeed: XMLResource {
    typealias Response = Feed
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/rss") }
}

struct Headlines: XMLResource {
    typealias Response = [FeedItem]
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/rss") }
    var decodingKeyPath: [String] { ["channel", "item"] }
}

/// A key path naming an element the feed does not have.
struct MissingElement: XMLResource {
    typealias Response = FeedItem  // an array would decode empty: XMLCoder reads a missing list as none
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/rss") }
    var decodingKeyPath: [String] { ["channel", "entry"] }
}

/// Written before `decodingKeyPath` was shared: `xmlKeyPath` still applies.
struct WrongShape: XMLResource {
    struct Strict: Decodable, Sendable {
        var title: String
        var rating: Int
    }
    typealias Response = [Strict]
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/rss") }
    var xmlKeyPath: [String] { ["channel", "item"] }
}

/// The feed's items with their dates, read by a decoder the resource configures.
struct DatedHeadlines: XMLResource {
    struct Item: Decodable, Sendable {
        var title: String
        var pubDate: Date
    }
    typealias Response = [Item]
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/rss") }
    var decodingKeyPath: [String] { ["channel", "item"] }
    var xmlDecoder: XMLDecoder {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let decoder = XMLDecoder()
        decoder.dateDecodingStrategy = .formatted(formatter)
        return decoder
    }
}

@Suite("XML resources")
struct XMLResourceTests {
    @Test("an RSS feed decodes whole, and below a key path")
    func rss() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport)
        let feed = try await WholeFeed(base: server.baseURL).load(using: coordinator)
        #expect(feed.channel.title == "Courier News")
        #expect(feed.channel.item.count == 3)
        let items = try await Headlines(base: server.baseURL).load(using: coordinator)
        #expect(items.map(\.title) == ["Caching lands", "Testing doubles", "Transport notes"])
        #expect(items[0].description == "Memory & disk <b>tiers</b>")
        #expect(items[1].description == "Fixtures & HAR replay")
        #expect(items[0].guid == .init(value: "https://example.com/posts/caching", isPermaLink: true))
        #expect(items[0].category == ["release", "caching"])
        #expect(items[2].category == nil)
        let error = await #expect(throws: ServiceError.self) {
            try await WrongShape(base: server.baseURL).load(using: coordinator)
        }
        #expect(error?.code == .decodingFailed)
        #expect(error?.message.contains("rating") == true)
        let missing = await #expect(throws: ServiceError.self) {
            try await MissingElement(base: server.baseURL).load(using: coordinator)
        }
        #expect(missing?.code == .decodingFailed)
        #expect(missing?.message.contains("missing key 'entry'") == true)
        // The resource's own decoder reads the RFC 822 dates.
        let dated = try await DatedHeadlines(base: server.baseURL).load(using: coordinator)
        #expect(dated.map(\.pubDate.timeIntervalSince1970) == [1_795_348_800, 1_795_253_400, 1_795_197_600])
        await transport.shutdown()
        await server.stop()
    }
}

/// The README's XML example, against the loopback server's feed.
@Suite struct XMLReadmeExamplesTests {
    struct FeedItem: Decodable, Sendable {
        let title: String
        let link: String
    }

    struct Headlines: XMLResource {
        typealias Response = [FeedItem]
        var base = "https://example.com"
        var endpoint: Endpoint { Endpoint(base, path: "/rss") }
        var xmlKeyPath: [String] { ["channel", "item"] }
    }

    @Test func theXMLExampleRuns() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        try await RequestCoordinator.$current.withValue(RequestCoordinator(transport: transport)) {
            let items = try await Headlines(base: server.baseURL).load()
            #expect(items.first?.link == "https://example.com/posts/caching")
        }
        await transport.shutdown()
        await server.stop()
    }
}
