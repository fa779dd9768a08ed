import CourierJSON
import CourierTestServer
import Foundation
import Testing

/// Numbers are parsed from bytes without `String`s: they must still be the correctly rounded
/// values the C library (and so Foundation) gives.
@Suite("Numbers")
struct NumberTests {
    @Test("100,000 random doubles round-trip bit for bit; random decimal texts match strtod")
    func doubles() throws {
        var random = SeededGenerator(seed: 0xD0_0B1E)
        var texts: [String] = []
        for _ in 0..<50_000 {
            let value = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random))
            if value.isFinite { texts.append("\(value)".replacingOccurrences(of: "e+", with: "e")) }
            let digits = String(UInt64.random(in: 0...UInt64.max, using: &random)).prefix(
                Int.random(in: 1...20, using: &random))
            let point = Int.random(in: 0...digits.count, using: &random)
            var text =
                point == digits.count
                ? String(digits)
                : digits.prefix(point == 0 ? 1 : point) + "." + digits.dropFirst(point == 0 ? 1 : point)
            if text.hasSuffix(".") { text.removeLast() }
            if random.chance(0.5) { text += "e\(Int.random(in: -40...40, using: &random))" }
            texts.append(random.chance(0.5) ? "-" + text : text)
        }
        let document = Data(("[" + texts.joined(separator: ",") + "]").utf8)
        let ours = try CourierJSONDecoder().decode([Double].self, from: document)
        for (text, value) in zip(texts, ours) {
            let expected = try #require(Double(text))
            #expect(value.bitPattern == expected.bitPattern, "\(text): \(value) vs \(expected)")
            if value.bitPattern != expected.bitPattern { break }
        }
        let floats = try CourierJSONDecoder().decode(
            [Float].self,
            from: Data(
                ("[" + texts.filter { Float($0)?.isFinite == true && Float($0) != 0 }.joined(separator: ",") + "]").utf8
            ))
        let expectedFloats = texts.compactMap { Float($0) }.filter { $0.isFinite && $0 != 0 }
        #expect(floats.map(\.bitPattern) == expectedFloats.map(\.bitPattern))
    }

    @Test("halfway cases and extremes")
    func extremes() {
        let pair = DecoderPair()
        for text in [
            "9007199254740993", "9007199254740992.5", "2.2250738585072011e-308", "4.9406564584124654e-324",
            "1.7976931348623157e308", "1.7976931348623158e308", "1e308", "1e309", "1e-400", "0e999", "-0", "0.1",
            "0.30000000000000004",
            "123456789012345678901234567890", "1.00000000000000011102230246251565404236316680908203125",
            "8.98846567431158e307",
        ] {
            pair.expectSame([Double].self, "[\(text)]")
            pair.expectSame([Float].self, "[\(text)]")
            pair.expectSame([Int64].self, "[\(text)]")
            pair.expectSame([UInt8].self, "[\(text)]")
        }
    }
}
