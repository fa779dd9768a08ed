import CourierJSON
import Foundation
import Testing

/// Documents that are not JSON: always `dataCorrupted` with a `JSONSyntaxError` saying where,
/// never a crash or a hang.
@Suite("Invalid JSON")
struct InvalidJSONTests {
    static let invalid: [String] = [
        "", " ", "[", "]", "{", "}", "[1", "[1,", "[1 2]", "[,]", "[1,,2]", "{\"a\"}", "{\"a\":}", "{\"a\" 1}",
        "{\"a\":1 \"b\":2}", "{a:1}", "{'a':1}", "{\"a\":1}}", "[1]]", "tru", "nul", "falsey", "True", "NULL",
        "01", "-", "-01", "1.", ".5", "+5", "1e", "1e+", "1.e5", "0x10", "Infinity", "-Infinity", "NaN", "1 2",
        "\"abc", "\"\\x\"", "\"\\u00g0\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "\"a\u{1}b\"", "\"tab\there\"", "[1]\u{0}", "[\"a\"] x", "/* comment */ 1", "[1] // c",
    ]

    @Test("each one is dataCorrupted for both decoders, with a line and column")
    func invalidDocuments() throws {
        let pair = DecoderPair()
        for text in Self.invalid {
            let (ours, foundation) = DynamicModel.$pending.withValue(.any) { pair.outcomes(Document.self, text) }
            #expect(ours.isDataCorrupted, "\(text.debugDescription): \(ours)")
            #expect(foundation.value == nil, "\(text.debugDescription): Foundation \(foundation)")
            do {
                _ = try CourierJSONDecoder().decode(Document.self, from: Data(text.utf8))
            } catch DecodingError.dataCorrupted(let context) {
                let syntax = try #require(context.underlyingError as? JSONSyntaxError, "\(text.debugDescription)")
                #expect(syntax.line >= 1 && syntax.column >= 1 && syntax.offset <= text.utf8.count)
            }
        }
    }

    @Test("where Foundation is lenient we are not: trailing commas, unread bad strings")
    func stricterThanFoundation() {
        for text in ["[1,]", "{\"a\":1,}", "{\"a\":1,\"b\":\"\\ud800\"}"] {
            #expect(throws: DecodingError.self, "\(text)") {
                try CourierJSONDecoder().decode([String: Int].self, from: Data(text.utf8))
            }
        }
        let invalidUTF8 = Data(Array(#"{"a":1,"b":""#.utf8) + [0xFF] + Array(#""}"#.utf8))
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode([String: Int].self, from: invalidUTF8) }
        for bytes: [UInt8] in [
            [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
            [0x22, 0xE2, 0x82, 0x22],
        ] {
            #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(String.self, from: Data(bytes)) }
        }
    }

    @Test("the syntax error says what and where")
    func errorPosition() throws {
        let text = "{\n  \"a\": [1, 2,\n  x]\n}"
        do {
            _ = try CourierJSONDecoder().decode([String: [Int]].self, from: Data(text.utf8))
            Issue.record("decoded")
        } catch DecodingError.dataCorrupted(let context) {
            let syntax = try #require(context.underlyingError as? JSONSyntaxError)
            #expect(syntax.line == 3 && syntax.column == 3)
            #expect(syntax.reason.contains("'x'"))
            #expect(syntax.description.contains("line 3, column 3"))
        }
    }

    @Test("nesting: 512 levels decode, 513 and 100,000 are errors, not stack overflows")
    func nesting() throws {
        func nested(_ depth: Int) -> Data {
            Data((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        }
        let pair = DecoderPair()
        for depth in [1, 511, 512, 513] {
            let (ours, foundation) = DynamicModel.$pending.withValue(.any) {
                pair.outcomes(Document.self, nested(depth))
            }
            #expect(ours.matches(foundation), "depth \(depth): \(ours) / \(foundation)")
        }
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(Document.self, from: nested(100_000)) }
        let objects = Data(
            (String(repeating: "{\"a\":", count: 100_000) + "1" + String(repeating: "}", count: 100_000)).utf8)
        #expect(throws: DecodingError.self) { try CourierJSONDecoder().decode(Document.self, from: objects) }
    }

    @Test("every truncation of a document decodes as Foundation decodes it, or fails")
    func truncations() {
        let text =
            #"{"id": 7, "name": "Zoë \u00e9\ud83d\ude00", "tags": ["a", "b"], "score": -1.5e-3, "ok": true, "none": null}"#
        let bytes = Array(text.utf8)
        let pair = DecoderPair()
        for end in 0..<bytes.count {
            let (ours, foundation) = DynamicModel.$pending.withValue(.any) {
                pair.outcomes(Document.self, Data(bytes[..<end]))
            }
            #expect(ours.isDataCorrupted || ours.matches(foundation), "\(end): \(ours) / \(foundation)")
            if foundation.value != nil { #expect(ours.matches(foundation)) }
        }
    }
}
