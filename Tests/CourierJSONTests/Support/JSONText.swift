import CourierTestServer
import Foundation

/// A JSON document being generated, rendered with random (valid) spelling: whitespace, escapes
/// for any character, `\u` surrogate pairs.
indirect enum JSONText {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])

    func render(using random: inout SeededGenerator) -> String {
        var output = ""
        render(into: &output, using: &random)
        return output
    }

    func render(into output: inout String, using random: inout SeededGenerator) {
        func space() {
            guard random.chance(0.15) else { return }
            output += [" ", "\n", "\t", "\r\n  "].randomElement(using: &random)!
        }
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): JSONText.renderString(text, into: &output, using: &random)
        case .array(let elements):
            output += "["
            space()
            for (index, element) in elements.enumerated() {
                if index > 0 {
                    output += ","
                    space()
                }
                element.render(into: &output, using: &random)
                space()
            }
            output += "]"
        case .object(let members):
            output += "{"
            space()
            for (index, (key, value)) in members.enumerated() {
                if index > 0 {
                    output += ","
                    space()
                }
                JSONText.renderString(key, into: &output, using: &random)
                space()
                output += ":"
                space()
                value.render(into: &output, using: &random)
                space()
            }
            output += "}"
        }
    }

    static func renderString(_ text: String, into output: inout String, using random: inout SeededGenerator) {
        output += "\""
        let escapeAll = random.chance(0.05)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += random.chance(0.5) ? "\\n" : "\\u000a"
            case "\t": output += "\\t"
            case "/" where random.chance(0.3): output += "\\/"
            case _ where scalar.value < 0x20 || escapeAll || random.chance(0.02):
                for unit in String(scalar).utf16 {
                    let hex = String(unit, radix: 16)
                    let padded = String(repeating: "0", count: 4 - hex.count) + hex
                    output += "\\u" + (random.chance(0.5) ? padded : padded.uppercased())
                }
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// A random string: ASCII words, sometimes accents, emoji, quotes, backslashes, controls.
    static func randomString(using random: inout SeededGenerator) -> String {
        let pieces = [
            "alpha", "Beta", " ", "käse", "naïve", "東京", "🙂", "\"", "\\", "/", "\n", "\t", "\u{1}", "e\u{301}", "é",
            "0", "-", "_",
        ]
        let count = Int.random(in: 0...6, using: &random)
        return (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined()
    }
}
