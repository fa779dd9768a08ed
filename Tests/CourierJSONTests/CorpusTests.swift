import CourierJSON
import Foundation
import Testing

/// Real-world-shaped documents decoded by both decoders into typical models.
@Suite("Corpus: real-world-shaped documents")
struct CorpusTests {
    struct Repository: Codable, Equatable {
        struct Owner: Codable, Equatable {
            var login: String
            var id: Int
            var avatarUrl: URL
            var siteAdmin: Bool
        }
        struct License: Codable, Equatable {
            var key: String
            var spdxId: String?
        }
        var id: Int
        var nodeId: String
        var fullName: String
        var `private`: Bool
        var owner: Owner
        var description: String?
        var fork: Bool
        var createdAt: Date
        var pushedAt: Date?
        var stargazersCount: Int
        var language: String?
        var topics: [String]
        var license: License?
        var score: Double
    }

    static let repositories = #"""
        {"total_count": 2, "incomplete_results": false, "items": [
          {"id": 44838949, "node_id": "MDEwOlJlcG9zaXRvcnk0NDgzODk0OQ==", "full_name": "apple/swift",
           "private": false, "owner": {"login": "apple", "id": 10639145,
           "avatar_url": "https://avatars.githubusercontent.com/u/10639145?v=4", "site_admin": false},
           "description": "The Swift Programming Language \u2014 \"fast\" & safe \/ \ud83d\ude80", "fork": false,
           "created_at": "2015-10-23T21:15:07Z", "pushed_at": "2026-11-20T09:01:22Z", "stargazers_count": 67000,
           "language": "C++", "topics": ["swift", "compiler"], "license": {"key": "apache-2.0", "spdx_id": "Apache-2.0"},
           "score": 1.0},
          {"id": 1, "node_id": "x", "full_name": "someone/thing", "private": true,
           "owner": {"login": "someone", "id": 2, "avatar_url": "https://example.com/a.png", "site_admin": true},
           "description": null, "fork": true, "created_at": "2001-01-01T00:00:00.5+02:00", "pushed_at": null,
           "stargazers_count": 0, "language": null, "topics": [], "license": null, "score": 0.25, "extra": {"nested": [1, 2, {"x": null}]}}
        ]}
        """#

    struct SearchResult<Item: Codable & Equatable>: Codable, Equatable {
        var totalCount: Int
        var incompleteResults: Bool
        var items: [Item]
    }

    @Test("a search result with snake_case keys, ISO 8601 dates, optionals, escapes and extra keys")
    func repositories() throws {
        let pair = DecoderPair(snakeCase: true, dates: .iso8601)
        pair.expectSame(SearchResult<Repository>.self, Self.repositories)
        let result = try pair.ours.decode(SearchResult<Repository>.self, from: Data(Self.repositories.utf8))
        #expect(result.items[0].description == "The Swift Programming Language — \"fast\" & safe / 🚀")
        #expect(result.items[1].createdAt == Date(timeIntervalSinceReferenceDate: -7199.5))
        // Without the strategies the keys do not match: the same keyNotFound.
        DecoderPair().expectSame(SearchResult<Repository>.self, Self.repositories)
    }

    struct FeatureCollection: Codable, Equatable {
        struct Feature: Codable, Equatable {
            struct Geometry: Codable, Equatable {
                var type: String
                var coordinates: [Double]
            }
            var type: String
            var geometry: Geometry
            var properties: [String: String?]
        }
        var type: String
        var features: [Feature]
        var bbox: [Double]?
    }

    @Test("GeoJSON: arrays of doubles, string-keyed dictionaries with nulls")
    func geoJSON() {
        let json = """
            {"type":"FeatureCollection","bbox":[-180.0,-90,180,90.0],"features":[
             {"type":"Feature","geometry":{"type":"Point","coordinates":[-9.1393366,38.7222524]},"properties":{"name":"Lisboa","name_pt":null}},
             {"type":"Feature","geometry":{"type":"Point","coordinates":[139.6917,35.6895,40.123456789012345]},"properties":{"name":"東京"}},
             {"type":"Feature","geometry":{"type":"Point","coordinates":[1e-7,-0.0,5E+2,1.7976931348623157e308,5e-324]},"properties":{}}]}
            """
        DecoderPair().expectSame(FeatureCollection.self, json)
        // Dictionary keys stay as written under snake_case.
        DecoderPair(snakeCase: true).expectSame(FeatureCollection.self, json)
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case rectangle(width: Double, height: Double)
        case empty
    }

    enum Status: String, Codable, Equatable { case active, suspended }
    enum Level: Int, Codable, Equatable {
        case low = 1
        case high = 3
    }

    struct Drawing: Codable, Equatable {
        var shapes: [Shape]
        var status: Status
        var levels: [Level]
        var counts: [Int: Int]
        var ids: Set<UUID>
        var price: Decimal
        var link: URL
        var payload: Data
        var tiny: Int8
        var big: UInt64
        var ratio: Float
    }

    @Test("enums with payloads, raw values, Int-keyed dictionaries, sets, Decimal, URL, Data, ranges")
    func codableVariety() {
        let json = #"""
            {"shapes":[{"circle":{"radius":2.5}},{"rectangle":{"width":3,"height":4}},{"empty":{}}],
             "status":"active","levels":[1,3],"counts":{"1":10,"2":20},
             "ids":["E621E1F8-C36C-495A-93FC-0C247A3E6E5F"],"price":12345678901234567890.25,
             "link":"https://example.com/a?b=c","payload":"AQID","tiny":-128,"big":18446744073709551615,"ratio":0.1}
            """#
        DecoderPair().expectSame(Drawing.self, json)
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #""status":"active""#, with: #""status":"gone""#))
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #"{"empty":{}}"#, with: #"{"empty":{},"circle":{"radius":1}}"#))
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #""counts":{"1":10,"2":20}"#, with: #""counts":{"x":10}"#))
        DecoderPair().expectSame(Drawing.self, json.replacingOccurrences(of: "\"tiny\":-128", with: "\"tiny\":-129"))
        DecoderPair().expectSame(Drawing.self, json.replacingOccurrences(of: "\"ratio\":0.1", with: "\"ratio\":1e39"))
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #""payload":"AQID""#, with: #""payload":"@@""#))
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #""link":"https://example.com/a?b=c""#, with: #""link":"""#))
        DecoderPair().expectSame(
            Drawing.self, json.replacingOccurrences(of: #""price":12345678901234567890.25"#, with: #""price":"12""#))
    }

    class Animal: Codable, Equatable {
        var name: String
        init(name: String) { self.name = name }
        static func == (lhs: Animal, rhs: Animal) -> Bool { lhs.name == rhs.name && type(of: lhs) == type(of: rhs) }
    }

    final class Dog: Animal {
        var breed: String
        enum CodingKeys: String, CodingKey { case breed }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            breed = try container.decode(String.self, forKey: .breed)
            try super.init(from: container.superDecoder())
        }
        static func == (lhs: Dog, rhs: Dog) -> Bool { lhs.name == rhs.name && lhs.breed == rhs.breed }
    }

    struct Kennel: Decodable, Equatable {
        var dogs: [Dog]
        static func == (lhs: Kennel, rhs: Kennel) -> Bool { lhs.dogs == rhs.dogs }
    }

    @Test("a subclass decoding its superclass through superDecoder(), present and missing")
    func superDecoder() {
        DecoderPair().expectSame(Kennel.self, #"{"dogs":[{"breed":"collie","super":{"name":"Lassie"}}]}"#)
        DecoderPair().expectSame(Kennel.self, #"{"dogs":[{"breed":"collie"}]}"#)
        DecoderPair().expectSame(Kennel.self, #"{"dogs":[{"breed":"collie","super":{"name":5}}]}"#)
    }

    struct Manual: Decodable, Equatable {
        var keys: [String]
        var has: Bool
        var nilFlag: Bool
        var nested: [Int]
        var pairs: [String]
        var context: String

        enum Keys: String, CodingKey { case a, b, list, obj, missing }
        enum Inner: String, CodingKey { case x, y }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            keys = container.allKeys.map(\.stringValue).sorted()
            has = container.contains(.missing)
            nilFlag = try container.decodeNil(forKey: .b)
            var list = try container.nestedUnkeyedContainer(forKey: .list)
            var values: [Int] = []
            while !list.isAtEnd {
                if try list.decodeNil() {
                    values.append(-1)
                    continue
                }
                if var inner = try? list.nestedUnkeyedContainer() {
                    while !inner.isAtEnd { values.append(try inner.decode(Int.self) * 100) }
                    continue
                }
                values.append(try list.decode(Int.self))
            }
            nested = values
            let object = try container.nestedContainer(keyedBy: Inner.self, forKey: .obj)
            pairs = [
                try object.decode(String.self, forKey: .x),
                String(try object.decodeIfPresent(Int.self, forKey: .y) ?? 0),
            ]
            context = (decoder.userInfo[CodingUserInfoKey(rawValue: "context")!] as? String) ?? "none"
        }
    }

    @Test("hand-written init(from:): allKeys, contains, decodeNil, nested containers, userInfo")
    func manualDecoding() {
        let pair = DecoderPair().userInfo(CodingUserInfoKey(rawValue: "context")!, "tests")
        pair.expectSame(Manual.self, #"{"a":1,"b":null,"unknown":true,"list":[1,null,[2,3],4],"obj":{"x":"hi","y":7}}"#)
        pair.expectSame(Manual.self, #"{"a":1,"b":2,"list":[1,"x"],"obj":{"x":"hi"}}"#)
        pair.expectSame(Manual.self, #"{"a":1,"b":2,"list":{},"obj":{"x":"hi"}}"#)
        pair.expectSame(Manual.self, #"{"a":1,"list":[],"obj":{"x":"hi"}}"#)
        pair.expectSame(Manual.self, #"{"a":1,"b":null,"list":[],"obj":[]}"#)
    }

    // Key names the key strategies must convert as Foundation does, odd ones included.
    // swift-format-ignore: AlwaysUseLowerCamelCase, IdentifiersMustBeASCII
    struct Keys: Codable, Equatable {
        var userID: Int
        var urlString: String
        var sha256Hash: String
        var _private: Int
        var trailing_: Int
        var café: Int
    }

    @Test("snake_case corner cases: acronyms, digits, leading and trailing underscores, non-ASCII")
    func snakeCaseCorners() {
        let pair = DecoderPair(snakeCase: true)
        pair.expectSame(
            Keys.self, #"{"user_i_d":1,"url_string":"u","sha256_hash":"h","_private":2,"trailing_":3,"café":4}"#)
        pair.expectSame(
            Keys.self, #"{"user_id":1,"URL_STRING":"u","sha256_hash":"h","_private":2,"trailing_":3,"café":4}"#)
        pair.expectSame(
            Keys.self, #"{"userID":1,"url__string":"u","sha_256_hash":"h","__private":2,"trailing__":3,"caf\u00e9":4}"#)
        pair.expectSame([String: Int].self, #"{"snake_key":1,"camelKey":2}"#)
        // Two keys that convert alike: the first wins.
        pair.expectSame(
            Keys.self,
            #"{"user_i_d":1,"userID":9,"url_string":"u","urlString":"v","sha256_hash":"h","_private":2,"trailing_":3,"café":4}"#
        )
        DecoderPair().expectSame(
            Keys.self,
            #"{"userID":1,"userID":2,"urlString":"u","sha256Hash":"h","_private":2,"trailing_":3,"cafe\u0301":4}"#)
    }
}
