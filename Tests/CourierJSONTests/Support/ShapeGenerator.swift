import CourierTestServer
import Foundation

/// Random model shapes, and random documents for them: mostly valid, with a few of the
/// mistakes real payloads have (wrong kinds, nulls, missing, extra and repeated keys, numbers
/// out of range).
struct ShapeGenerator {
    var random: SeededGenerator
    let snakeCase: Bool
    let dates: DecoderPair.DateStrategy
    /// The chance that any one value is replaced by a value of the wrong kind.
    var mistakes = 0.03

    static let words = [
        "id", "name", "user", "count", "created", "at", "url", "total", "items", "is", "active", "value", "type", "zip",
        "code", "sha256", "v2", "x", "geo", "last", "modified",
    ]

    mutating func schema(depth: Int = 0) -> Schema {
        let leaves: [Schema] = [
            .int, .int8, .int16, .int32, .int64, .uint, .uint8, .uint16, .uint32, .uint64, .float, .double, .double,
            .bool, .string, .string, .date, .data, .url, .uuid, .decimal,
        ]
        if depth >= 3 || random.chance(0.45) { return leaves.randomElement(using: &random)! }
        switch Int.random(in: 0..<10, using: &random) {
        case 0, 1: return .optional(schema(depth: depth + 1))
        case 2, 3: return .array(schema(depth: depth + 1))
        case 4: return .dictionary(schema(depth: depth + 1))
        case 5: return .any
        default: return .object(fields(depth: depth + 1))
        }
    }

    mutating func fields(depth: Int) -> [Schema.Field] {
        var used = Set<String>()
        var fields: [Schema.Field] = []
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            let parts = (0..<Int.random(in: 1...3, using: &random)).map { _ in Self.words.randomElement(using: &random)!
            }
            let name = parts[0] + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
            guard used.insert(name).inserted, used.insert(parts.joined(separator: "_")).inserted || !snakeCase else {
                continue
            }
            let written = snakeCase ? parts.joined(separator: "_") : name
            let schema = schema(depth: depth)
            var access = Schema.Access.direct
            if random.chance(0.1) { access = .superDecoder }
            if case .object = schema, random.chance(0.4) { access = .nested }
            if case .array = schema, random.chance(0.4) { access = .nested }
            fields.append(Schema.Field(name: name, written: written, schema: schema, access: access))
        }
        return fields
    }

    mutating func document(for schema: Schema, depth: Int = 0) -> JSONText {
        if random.chance(mistakes) { return wrongValue() }
        switch schema {
        case .int: return integer(Int64.min, Int64.max)
        case .int8: return integer(Int64(Int8.min), Int64(Int8.max))
        case .int16: return integer(Int64(Int16.min), Int64(Int16.max))
        case .int32: return integer(Int64(Int32.min), Int64(Int32.max))
        case .int64: return integer(Int64.min, Int64.max)
        case .uint, .uint64:
            return random.chance(0.5)
                ? .number("\(UInt64.random(in: 0...UInt64.max, using: &random))") : integer(0, 1000)
        case .uint8: return integer(0, 255)
        case .uint16: return integer(0, 65535)
        case .uint32: return integer(0, Int64(UInt32.max))
        case .float: return .number(floatText())
        case .double, .decimal: return .number(doubleText())
        case .bool: return .bool(random.chance(0.5))
        case .string: return .string(JSONText.randomString(using: &random))
        case .date: return dateValue()
        case .data:
            let bytes = (0..<Int.random(in: 0...12, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            return .string(random.chance(0.05) ? "not base64!" : Data(bytes).base64EncodedString())
        case .url:
            return .string(
                random.chance(0.1)
                    ? ""
                    : "https://example.com/\(Self.words.randomElement(using: &random)!)?q=\(Int.random(in: 0...99, using: &random))"
            )
        case .uuid: return .string(random.chance(0.1) ? "not-a-uuid" : UUID().uuidString)
        case .optional(let inner): return random.chance(0.3) ? .null : document(for: inner, depth: depth + 1)
        case .array(let element):
            return .array(
                (0..<Int.random(in: 0...4, using: &random)).map { _ in document(for: element, depth: depth + 1) })
        case .dictionary(let element):
            var members: [(String, JSONText)] = []
            var keys = Set<String>()
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let key =
                    random.chance(0.5)
                    ? JSONText.randomString(using: &random) : Self.words.randomElement(using: &random)! + "_key"
                guard keys.insert(key).inserted else { continue }
                members.append((key, document(for: element, depth: depth + 1)))
            }
            return .object(members)
        case .object(let fields):
            var members: [(String, JSONText)] = []
            for field in fields {
                if case .optional = field.schema, random.chance(0.2) { continue }
                if random.chance(0.02) { continue }
                members.append((field.written, document(for: field.schema, depth: depth + 1)))
            }
            if random.chance(0.15) {
                members.append(("extra_\(Int.random(in: 0...9, using: &random))", anyValue(depth: depth + 1)))
            }
            if random.chance(0.05), let repeated = members.randomElement(using: &random) {
                members.append((repeated.0, random.chance(0.5) ? wrongValue() : repeated.1))
            }
            if random.chance(0.3) { members.shuffle(using: &random) }
            return .object(members)
        case .any: return anyValue(depth: depth)
        }
    }

    mutating func integer(_ lower: Int64, _ upper: Int64) -> JSONText {
        let value: Int64 =
            switch Int.random(in: 0..<10, using: &random) {
            case 0: lower
            case 1: upper
            case 2, 3: Int64.random(in: max(lower, -100)...min(upper, 100), using: &random)
            default: Int64.random(in: lower...upper, using: &random)
            }
        if random.chance(0.03) {
            // Just out of range.
            return .number(
                value == upper && upper < Int64.max
                    ? "\(upper + 1)" : value == lower && lower > Int64.min ? "\(lower - 1)" : "\(value)")
        }
        if random.chance(0.03), value > -1_000_000, value < 1_000_000 {
            return .number(random.chance(0.5) ? "\(value).0" : "\(value)e0")
        }
        if random.chance(0.01), value > -1_000_000, value < 1_000_000 { return .number("\(value).5") }
        return .number("\(value)")
    }

    mutating func floatText() -> String {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return "\(Float.random(in: -1000...1000, using: &random))"
        case 1:
            let value = Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &random))
            return value.isFinite ? "\(value)".replacingOccurrences(of: "e+", with: "e") : "1.5"
        case 2: return "\(Int.random(in: -99999...99999, using: &random)).\(Int.random(in: 0...999, using: &random))"
        default: return "\(Int.random(in: -1000...1000, using: &random))"
        }
    }

    mutating func doubleText() -> String {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return "\(Double.random(in: -1e6...1e6, using: &random))"
        case 1:
            let value = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random))
            return value.isFinite ? "\(value)".replacingOccurrences(of: "e+", with: "e") : "2.5e-3"
        case 2: return "\(Int.random(in: -99999...99999, using: &random)).\(Int.random(in: 0...99999, using: &random))"
        case 3:
            return
                "\(Int.random(in: 1...9, using: &random)).\(Int.random(in: 0...999, using: &random))E\(Int.random(in: -30...30, using: &random))"
        default: return "\(Int.random(in: -1_000_000...1_000_000, using: &random))"
        }
    }

    mutating func dateValue() -> JSONText {
        switch dates {
        case .deferred, .seconds, .milliseconds: return .number(doubleText())
        case .iso8601:
            let year = Int.random(in: 1590...2100, using: &random)
            let month = Int.random(in: 1...12, using: &random)
            let day = Int.random(in: 1...(random.chance(0.05) ? 31 : 28), using: &random)
            func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
            var text =
                "\(year)-\(two(month))-\(two(day))T\(two(Int.random(in: 0...23, using: &random))):\(two(Int.random(in: 0...59, using: &random))):\(two(Int.random(in: 0...59, using: &random)))"
            if random.chance(0.3) {
                text +=
                    "."
                    + String(Int.random(in: 0...999_999_999, using: &random)).prefix(
                        Int.random(in: 1...9, using: &random))
            }
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                text +=
                    "+\(two(Int.random(in: 0...14, using: &random))):\(["00", "30", "45"].randomElement(using: &random)!)"
            case 1: text += "-\(two(Int.random(in: 0...12, using: &random)))00"
            case 2: text = random.chance(0.5) ? text.lowercased() + "z" : text + "+01"
            default: text += "Z"
            }
            return .string(random.chance(0.03) ? "yesterday" : text)
        }
    }

    mutating func wrongValue() -> JSONText {
        [.null, .bool(true), .number("1"), .number("-2.5"), .string("x"), .array([]), .object([])].randomElement(
            using: &random)!
    }

    mutating func anyValue(depth: Int) -> JSONText {
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &random) {
        case 0: return .null
        case 1: return .bool(random.chance(0.5))
        case 2: return .number(doubleText())
        case 3: return .number("\(Int64.random(in: Int64.min...Int64.max, using: &random))")
        case 4: return .string(JSONText.randomString(using: &random))
        case 5: return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in anyValue(depth: depth + 1) })
        default:
            var keys = Set<String>()
            return .object(
                (0..<Int.random(in: 0...3, using: &random)).compactMap { _ in
                    let key = JSONText.randomString(using: &random)
                    return keys.insert(key).inserted ? (key, anyValue(depth: depth + 1)) : nil
                })
        }
    }
}
