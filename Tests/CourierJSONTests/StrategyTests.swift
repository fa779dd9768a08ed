import CourierJSON
import Foundation
import Testing

/// Each strategy against Foundation's configured the same way.
@Suite("Strategies")
struct StrategyTests {
    struct Event: Codable, Equatable { var at: Date }

    @Test(
        "dates: deferred, seconds and milliseconds since 1970, ISO 8601 in its many spellings",
        arguments: [
            DecoderPair.DateStrategy.deferred, .seconds, .milliseconds, .iso8601,
        ])
    func dates(strategy: DecoderPair.DateStrategy) {
        let pair = DecoderPair(dates: strategy)
        for value in [
            #"0"#, #"1700000000.5"#, #"-1.25e3"#, #""2026-11-22T12:30:00Z""#, #"null"#, #"true"#,
            #""2026-11-22T12:30:00.123456789+05:30""#, #""2026-02-30T12:30:00Z""#, #""1582-10-10T00:00:00Z""#,
            #""2026-11-22T12:30:00""#, #""2026-11-22t12:30:00z""#, #""2026-11-22T12:30:00-0800""#,
            #""2026-11-22T24:00:00Z""#,
            #""2026-11-22T12:30:00.5Z""#, #""2026-11-22T12:30:00+01""#, #""2026-11-22T12:30:00GMT""#, #""soon""#,
        ] {
            pair.expectSame(Event.self, #"{"at":\#(value)}"#)
            pair.expectSame([Date].self, "[\(value)]")
        }
    }

    @Test("the default strategies, set back by name, undo the others")
    func defaultsByName() throws {
        struct Stamp: Decodable, Equatable { var createdAt: Date }
        let snake = Data(#"{"created_at": 20}"#.utf8)
        let camel = Data(#"{"createdAt": 10}"#.utf8)
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .secondsSince1970
        #expect(try decoder.decode(Stamp.self, from: snake).createdAt == Date(timeIntervalSince1970: 20))
        decoder.dataDecodingStrategy = .deferredToData
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        decoder.keyDecodingStrategy = .useDefaultKeys
        decoder.dateDecodingStrategy = .deferredToDate
        decoder.dataDecodingStrategy = .base64
        decoder.nonConformingFloatDecodingStrategy = .throw
        #expect(try decoder.decode([Data].self, from: Data(#"["AQI="]"#.utf8)) == [Data([1, 2])])
        #expect(throws: DecodingError.self) { try decoder.decode([Double].self, from: Data(#"["inf"]"#.utf8)) }
        #expect(throws: DecodingError.self) { try decoder.decode(Stamp.self, from: snake) }
        // Date's own decoding: seconds since 2001, as a fresh decoder reads it.
        #expect(try decoder.decode(Stamp.self, from: camel).createdAt == Date(timeIntervalSinceReferenceDate: 10))
        #expect(try CourierJSONDecoder().decode(Stamp.self, from: camel) == decoder.decode(Stamp.self, from: camel))
    }

    @Test("dates: a parse strategy, and a custom closure that reads the value itself")
    func formattedAndCustom() throws {
        var ours = CourierJSONDecoder()
        ours.dateDecodingStrategy = .formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let parsed = try ours.decode([Date].self, from: Data(#"["2026-11-22T12:30:00.250Z"]"#.utf8))
        #expect(
            parsed == [try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse("2026-11-22T12:30:00.250Z")])
        #expect(throws: DecodingError.self) { try ours.decode([Date].self, from: Data(#"["2026-11-22"]"#.utf8)) }

        ours.dateDecodingStrategy = .custom { decoder in
            let days = try decoder.singleValueContainer().decode(Int.self)
            return Date(timeIntervalSince1970: Double(days) * 86_400)
        }
        let foundation = JSONDecoder()
        foundation.dateDecodingStrategy = .custom { decoder in
            let days = try decoder.singleValueContainer().decode(Int.self)
            return Date(timeIntervalSince1970: Double(days) * 86_400)
        }
        let pair = DecoderPair(ours: ours, foundation: foundation)
        pair.expectSame(Event.self, #"{"at":20000}"#)
        pair.expectSame(Event.self, #"{"at":"20000"}"#)
        pair.expectSame(Event.self, #"{"at":null}"#)
    }

    struct Blob: Codable, Equatable { var bytes: Data }

    @Test("data: Base64, Data's own array of bytes, custom")
    func data() {
        var pair = DecoderPair()
        for value in [#""AQID""#, #""""#, #""AQI""#, #""not base64""#, "[1,2,3]", "null", "7"] {
            pair.expectSame(Blob.self, #"{"bytes":\#(value)}"#)
        }
        pair.ours.dataDecodingStrategy = .deferredToData
        pair.foundation.dataDecodingStrategy = .deferredToData
        for value in ["[1,2,3]", "[]", "[256]", #""AQID""#, "[1,null]"] {
            pair.expectSame(Blob.self, #"{"bytes":\#(value)}"#)
        }
        pair.ours.dataDecodingStrategy = .custom { decoder in
            Data(try decoder.singleValueContainer().decode(String.self).utf8)
        }
        pair.foundation.dataDecodingStrategy = .custom { decoder in
            Data(try decoder.singleValueContainer().decode(String.self).utf8)
        }
        pair.expectSame(Blob.self, #"{"bytes":"hello"}"#)
        pair.expectSame(Blob.self, #"{"bytes":1}"#)
    }

    struct Reading: Codable, Equatable {
        var value: Double
        var small: Float
        static func == (lhs: Reading, rhs: Reading) -> Bool {
            lhs.value.bitPattern == rhs.value.bitPattern && lhs.small.bitPattern == rhs.small.bitPattern
        }
    }

    @Test("non-conforming floats: rejected by default, named strings when configured")
    func nonConformingFloats() {
        var pair = DecoderPair()
        pair.expectSame(Reading.self, #"{"value":"inf","small":"nan"}"#)
        pair.ours.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        pair.foundation.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        pair.expectSame(Reading.self, #"{"value":"inf","small":"-inf"}"#)
        pair.expectSame(Reading.self, #"{"value":"-inf","small":1.5}"#)
        pair.expectSame(Reading.self, #"{"value":"infinity","small":1.5}"#)
        let nan = try? pair.ours.decode(Reading.self, from: Data(#"{"value":"nan","small":"nan"}"#.utf8))
        #expect(nan?.value.isNaN == true && nan?.small.isNaN == true)
    }

    struct Profile: Codable, Equatable {
        var displayName: String
        var age: Int
    }

    @Test("a custom key strategy gets the coding path and the key as written")
    func customKeys() {
        var pair = DecoderPair()
        let strip: @Sendable ([any CodingKey]) -> any CodingKey = { path in
            let last = path.last!.stringValue
            return AnyKey(last.hasPrefix("x-") ? String(last.dropFirst(2)) : last)
        }
        pair.ours.keyDecodingStrategy = .custom(strip)
        pair.foundation.keyDecodingStrategy = .custom(strip)
        pair.expectSame(Profile.self, #"{"x-displayName":"Ann","x-age":30}"#)
        pair.expectSame([Profile].self, #"[{"x-displayName":"Ann","age":30},{"x-displayName":"Bo"}]"#)
        pair.expectSame(Profile.self, #"{"x-displayName":"Ann","displayName":"Bo","age":1}"#)
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension DecoderPair {
    init(ours: CourierJSONDecoder, foundation: JSONDecoder) {
        self.init()
        self.ours = ours
        self.foundation = foundation
    }
}
