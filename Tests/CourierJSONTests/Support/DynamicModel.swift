import Foundation

/// A model shape chosen at run time, so that property tests can try thousands of shapes: a
/// `Decodable` whose `init(from:)` follows a schema through every container API.
indirect enum Schema: Sendable, CustomStringConvertible {
    case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
    case float, double, bool, string, date, data, url, uuid, decimal
    case optional(Schema)
    case array(Schema)
    case dictionary(Schema)
    case object([Field])
    /// Any JSON value, read by trying each kind through a single-value container.
    case any

    struct Field: Sendable {
        /// The key the model asks for.
        var name: String
        /// The key as written in documents (differs under snake_case).
        var written: String
        var schema: Schema
        var access: Access
    }

    /// How a field is read from its keyed container.
    enum Access: Sendable { case direct, nested, superDecoder }

    var description: String {
        switch self {
        case .optional(let inner): "\(inner)?"
        case .array(let inner): "[\(inner)]"
        case .dictionary(let inner): "[String: \(inner)]"
        case .object(let fields):
            "{" + fields.map { "\($0.name)(\($0.written)): \($0.schema)" }.joined(separator: ", ") + "}"
        case .int: "Int"
        case .int8: "Int8"
        case .int16: "Int16"
        case .int32: "Int32"
        case .int64: "Int64"
        case .uint: "UInt"
        case .uint8: "UInt8"
        case .uint16: "UInt16"
        case .uint32: "UInt32"
        case .uint64: "UInt64"
        case .float: "Float"
        case .double: "Double"
        case .bool: "Bool"
        case .string: "String"
        case .date: "Date"
        case .data: "Data"
        case .url: "URL"
        case .uuid: "UUID"
        case .decimal: "Decimal"
        case .any: "Any"
        }
    }
}

/// What a dynamic model decoded.
indirect enum DynamicValue: Equatable, Sendable {
    case null
    case int(Int64)
    case uint(UInt64)
    /// Floating-point values by bit pattern, so that -0.0 and 0.0 differ.
    case float(UInt32)
    case double(UInt64)
    case bool(Bool)
    case string(String)
    case date(Double)
    case data(Data)
    case url(String)
    case uuid(UUID)
    case decimal(String)
    case array([DynamicValue])
    case object([String: DynamicValue])
}

struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

/// The decoded value of a document under `DynamicModel.schema`.
struct DynamicModel: Decodable, Equatable {
    @TaskLocal static var pending: Schema = .any

    let value: DynamicValue

    init(from decoder: any Decoder) throws {
        value = try Self.decode(Self.pending, from: decoder)
    }

    /// Decodes a nested value through `decode(_:forKey:)` / `decode(_:)`, with its schema.
    static func nested<Result>(_ schema: Schema, _ body: () throws -> Result) rethrows -> Result {
        try $pending.withValue(schema) { try body() }
    }

    static func decode(_ schema: Schema, from decoder: any Decoder) throws -> DynamicValue {
        switch schema {
        case .object(let fields):
            return try decodeObject(fields, try decoder.container(keyedBy: DynamicKey.self))
        case .array(let element):
            var container = try decoder.unkeyedContainer()
            return try decodeArray(element, &container)
        case .dictionary(let element):
            let container = try decoder.container(keyedBy: DynamicKey.self)
            var result: [String: DynamicValue] = [:]
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                result[key.stringValue] = try decodeField(
                    Schema.Field(name: key.stringValue, written: key.stringValue, schema: element, access: .direct),
                    in: container)
            }
            return .object(result)
        case .optional(let inner):
            if try decoder.singleValueContainer().decodeNil() { return .null }
            return try decode(inner, from: decoder)
        case .any:
            return try decodeAny(decoder)
        default:
            return try decodeSingle(schema, try decoder.singleValueContainer())
        }
    }

    static func decodeObject(_ fields: [Schema.Field], _ container: KeyedDecodingContainer<DynamicKey>) throws
        -> DynamicValue
    {
        var result: [String: DynamicValue] = [:]
        for field in fields { result[field.name] = try decodeField(field, in: container) }
        return .object(result)
    }

    static func decodeArray(_ element: Schema, _ container: inout any UnkeyedDecodingContainer) throws -> DynamicValue {
        var items: [DynamicValue] = []
        if let count = container.count { items.reserveCapacity(count) }
        while !container.isAtEnd {
            switch element {
            case .int8: items.append(.int(Int64(try container.decode(Int8.self))))
            case .uint16: items.append(.uint(UInt64(try container.decode(UInt16.self))))
            case .int: items.append(.int(Int64(try container.decode(Int.self))))
            case .double: items.append(.double(try container.decode(Double.self).bitPattern))
            case .float: items.append(.float(try container.decode(Float.self).bitPattern))
            case .string: items.append(.string(try container.decode(String.self)))
            case .bool: items.append(.bool(try container.decode(Bool.self)))
            case .optional(let inner):
                if try container.decodeNil() {
                    items.append(.null)
                } else {
                    items.append(try nested(inner) { try container.decode(DynamicModel.self).value })
                }
            case .object(let fields):
                if items.count % 2 == 0 {
                    items.append(try decodeObject(fields, try container.nestedContainer(keyedBy: DynamicKey.self)))
                } else {
                    items.append(try nested(element) { try container.decode(DynamicModel.self).value })
                }
            case .array(let inner) where items.count % 2 == 1:
                var nestedContainer = try container.nestedUnkeyedContainer()
                items.append(try decodeArray(inner, &nestedContainer))
            default:
                items.append(try nested(element) { try container.decode(DynamicModel.self).value })
            }
        }
        return .array(items)
    }

    static func decodeField(_ field: Schema.Field, in container: KeyedDecodingContainer<DynamicKey>) throws
        -> DynamicValue
    {
        let key = DynamicKey(field.name)
        switch (field.access, field.schema) {
        case (.nested, .object(let fields)):
            return try decodeObject(fields, try container.nestedContainer(keyedBy: DynamicKey.self, forKey: key))
        case (.nested, .array(let element)):
            var nestedContainer = try container.nestedUnkeyedContainer(forKey: key)
            return try decodeArray(element, &nestedContainer)
        case (.superDecoder, let schema):
            return try decode(schema, from: try container.superDecoder(forKey: key))
        default: break
        }
        switch field.schema {
        case .int: return .int(Int64(try container.decode(Int.self, forKey: key)))
        case .int8: return .int(Int64(try container.decode(Int8.self, forKey: key)))
        case .int16: return .int(Int64(try container.decode(Int16.self, forKey: key)))
        case .int32: return .int(Int64(try container.decode(Int32.self, forKey: key)))
        case .int64: return .int(try container.decode(Int64.self, forKey: key))
        case .uint: return .uint(UInt64(try container.decode(UInt.self, forKey: key)))
        case .uint8: return .uint(UInt64(try container.decode(UInt8.self, forKey: key)))
        case .uint16: return .uint(UInt64(try container.decode(UInt16.self, forKey: key)))
        case .uint32: return .uint(UInt64(try container.decode(UInt32.self, forKey: key)))
        case .uint64: return .uint(try container.decode(UInt64.self, forKey: key))
        case .float: return .float(try container.decode(Float.self, forKey: key).bitPattern)
        case .double: return .double(try container.decode(Double.self, forKey: key).bitPattern)
        case .bool: return .bool(try container.decode(Bool.self, forKey: key))
        case .string: return .string(try container.decode(String.self, forKey: key))
        case .date: return .date(try container.decode(Date.self, forKey: key).timeIntervalSinceReferenceDate)
        case .data: return .data(try container.decode(Data.self, forKey: key))
        case .url: return .url(try container.decode(URL.self, forKey: key).absoluteString)
        case .uuid: return .uuid(try container.decode(UUID.self, forKey: key))
        case .decimal: return .decimal("\(try container.decode(Decimal.self, forKey: key))")
        case .optional(let inner):
            switch inner {
            case .int: return try container.decodeIfPresent(Int.self, forKey: key).map { .int(Int64($0)) } ?? .null
            case .string: return try container.decodeIfPresent(String.self, forKey: key).map { .string($0) } ?? .null
            case .double:
                return try container.decodeIfPresent(Double.self, forKey: key).map { .double($0.bitPattern) } ?? .null
            case .bool: return try container.decodeIfPresent(Bool.self, forKey: key).map { .bool($0) } ?? .null
            case .uint32:
                return try container.decodeIfPresent(UInt32.self, forKey: key).map { .uint(UInt64($0)) } ?? .null
            default:
                if !container.contains(key) { return .null }
                if try container.decodeNil(forKey: key) { return .null }
                return try nested(inner) { try container.decode(DynamicModel.self, forKey: key).value }
            }
        default:
            return try nested(field.schema) { try container.decode(DynamicModel.self, forKey: key).value }
        }
    }

    static func decodeSingle(_ schema: Schema, _ container: any SingleValueDecodingContainer) throws -> DynamicValue {
        switch schema {
        case .int: .int(Int64(try container.decode(Int.self)))
        case .int8: .int(Int64(try container.decode(Int8.self)))
        case .int16: .int(Int64(try container.decode(Int16.self)))
        case .int32: .int(Int64(try container.decode(Int32.self)))
        case .int64: .int(try container.decode(Int64.self))
        case .uint: .uint(UInt64(try container.decode(UInt.self)))
        case .uint8: .uint(UInt64(try container.decode(UInt8.self)))
        case .uint16: .uint(UInt64(try container.decode(UInt16.self)))
        case .uint32: .uint(UInt64(try container.decode(UInt32.self)))
        case .uint64: .uint(try container.decode(UInt64.self))
        case .float: .float(try container.decode(Float.self).bitPattern)
        case .double: .double(try container.decode(Double.self).bitPattern)
        case .bool: .bool(try container.decode(Bool.self))
        case .string: .string(try container.decode(String.self))
        case .date: .date(try container.decode(Date.self).timeIntervalSinceReferenceDate)
        case .data: .data(try container.decode(Data.self))
        case .url: .url(try container.decode(URL.self).absoluteString)
        case .uuid: .uuid(try container.decode(UUID.self))
        case .decimal: .decimal("\(try container.decode(Decimal.self))")
        default: .null
        }
    }

    /// Any JSON value, by trying each kind in turn.
    static func decodeAny(_ decoder: any Decoder) throws -> DynamicValue {
        if let container = try? decoder.container(keyedBy: DynamicKey.self) {
            var result: [String: DynamicValue] = [:]
            for key in container.allKeys {
                result[key.stringValue] = try nested(.any) {
                    try container.decode(DynamicModel.self, forKey: key).value
                }
            }
            return .object(result)
        }
        if var container = try? decoder.unkeyedContainer() {
            var items: [DynamicValue] = []
            while !container.isAtEnd {
                items.append(try nested(.any) { try container.decode(DynamicModel.self).value })
            }
            return .array(items)
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { return .null }
        if let value = try? single.decode(Bool.self) { return .bool(value) }
        if let value = try? single.decode(Int64.self) { return .int(value) }
        if let value = try? single.decode(UInt64.self) { return .uint(value) }
        if let value = try? single.decode(Double.self) { return .double(value.bitPattern) }
        return .string(try single.decode(String.self))
    }
}

/// A dynamic model at the top level, its schema given through the task-local.
struct Document: Decodable, Equatable {
    let value: DynamicValue
    init(from decoder: any Decoder) throws { value = try DynamicModel.decode(DynamicModel.pending, from: decoder) }
}
