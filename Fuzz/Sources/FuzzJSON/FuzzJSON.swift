// libFuzzer entry point for CourierJSON (built by scripts/fuzz.sh, see Fuzz/Package.swift).
// Any crash, sanitizer report or hang is a failure; thrown errors are the expected outcome
// for bad input.
import CourierJSON
import FoundationEssentials

/// Any JSON value, through every container kind.
indirect enum FuzzValue: Decodable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([FuzzValue])
    case object([String: FuzzValue])

    init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: FuzzKey.self) {
            var members: [String: FuzzValue] = [:]
            for key in container.allKeys {
                members[key.stringValue] = try container.decode(FuzzValue.self, forKey: key)
            }
            _ = container.contains(FuzzKey(stringValue: "id"))
            self = .object(members)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var items: [FuzzValue] = []
            while !container.isAtEnd { items.append(try container.decode(FuzzValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? single.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }
}

struct FuzzKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A typical model, so that typed paths (and their errors) run too.
struct FuzzRecord: Decodable {
    var id: Int
    var userName: String?
    var score: Double?
    var tags: [String]?
    var createdAt: Date?
    var flags: [String: Bool]?
    var small: Int8?
    var data: Data?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    var plain = CourierJSONDecoder()
    _ = try? plain.decode(FuzzValue.self, from: bytes)
    _ = try? plain.decode([FuzzRecord].self, from: bytes)
    _ = try? plain.decode(FuzzValue.self, from: bytes, atKeyPath: ["data", "items"])
    plain.keyDecodingStrategy = .convertFromSnakeCase
    plain.dateDecodingStrategy = .iso8601
    _ = try? plain.decode(FuzzRecord.self, from: bytes)
    _ = try? plain.decode([String: FuzzRecord].self, from: bytes)
    return 0
}
