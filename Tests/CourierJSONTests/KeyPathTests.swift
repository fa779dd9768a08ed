import CourierJSON
import Foundation
import Testing

@Suite("Key paths")
struct KeyPathTests {
    struct Item: Codable, Equatable {
        var id: Int
        var name: String
    }
    static let envelope = #"""
        {"meta": {"page": 1, "skipped": [1, {"deep": "x"}, "\u00e9"]},
         "data": {"total": 2, "items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "items": "a repeated key"},
         "trailer": [true, false, null]}
        """#

    @Test("decodes the value at the path (the first of repeated keys), skipping the rest")
    func decodesAtPath() throws {
        let items = try CourierJSONDecoder().decode(
            [Item].self, from: Data(Self.envelope.utf8), atKeyPath: ["data", "items"])
        #expect(items == [Item(id: 1, name: "a"), Item(id: 2, name: "b")])
        let total = try CourierJSONDecoder().decode(
            Int.self, from: Data(Self.envelope.utf8), atKeyPath: ["data", "total"])
        #expect(total == 2)
    }

    @Test("errors carry the key path as their coding path")
    func errors() {
        func failure(_ path: [String], _ json: String = KeyPathTests.envelope) -> Outcome<[Item]> {
            Outcome { try CourierJSONDecoder().decode([Item].self, from: Data(json.utf8), atKeyPath: path) }
        }
        #expect(failure(["data", "nope"]).description.hasPrefix("keyNotFound(nope) at [\"data\"]"))
        #expect(
            failure(["data", "total", "x"]).description.hasPrefix(
                "typeMismatch(Dictionary<String, Any>) at [\"data\", \"total\"]"))
        #expect(failure(["meta", "page"]).description.hasPrefix("typeMismatch(Array<Any>) at [\"meta\", \"page\"]"))
        #expect(
            failure(["data", "items"], #"{"data":{"items":[{"id":1,"name":2}]}}"#).description
                .hasPrefix("typeMismatch(String) at [\"data\", \"items\", \"[0]\", \"name\"]"))
        #expect(failure(["data"], "[]").description.hasPrefix("typeMismatch(Dictionary<String, Any>) at []"))
    }

    @Test("the whole document is still validated, outside the path too")
    func validatesEverything() {
        let broken = Self.envelope.replacingOccurrences(of: "[true, false, null]", with: "[true, false, nul]")
        #expect(
            Outcome {
                try CourierJSONDecoder().decode([Item].self, from: Data(broken.utf8), atKeyPath: ["data", "items"])
            }.isDataCorrupted)
        let badEscape = Self.envelope.replacingOccurrences(of: "\\u00e9", with: "\\ud800")
        #expect(
            Outcome {
                try CourierJSONDecoder().decode([Item].self, from: Data(badEscape.utf8), atKeyPath: ["data", "items"])
            }.isDataCorrupted)
    }

    @Test("a decoder kept past init(from:) still reads its document")
    func keptDecoder() throws {
        struct Keeper: Decodable {
            let decoder: any Decoder
            init(from decoder: any Decoder) throws { self.decoder = decoder }
        }
        let keeper = try CourierJSONDecoder().decode(Keeper.self, from: Data(#"{"id": 3, "name": "kept"}"#.utf8))
        #expect(try Item(from: keeper.decoder) == Item(id: 3, name: "kept"))
    }
}
