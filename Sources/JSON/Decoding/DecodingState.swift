import FoundationEssentials

/// The `Decoder` handed to `init(from:)`: one per top-level decode, moved from value to value
/// (nested values reuse it instead of making a decoder each). It is also the single-value
/// container of the value it is on.
final class DecodingState: Decoder, SingleValueDecodingContainer {
    let document: JSONDocument
    let bytes: UnsafePointer<UInt8>
    let tokens: UnsafeMutablePointer<Token>
    let options: CourierJSONDecoder
    /// The token of the value being decoded, and the path to it.
    var index: Int
    var path: CodingPathNode?
    /// The object whose keyed container keeps its keys as written: a `[String: Value]`
    /// about to decode itself (key strategies do not apply to dictionary keys).
    var verbatimObject = -1
    /// The last two types `decodeNested` found not to be arrays.
    var notArrays: (ObjectIdentifier?, ObjectIdentifier?) = (nil, nil)
    /// Keys converted the slow way (custom strategies, unusual snake_case), by key token.
    var convertedKeys: [Int: String] = [:]

    init(document: JSONDocument, options: CourierJSONDecoder) {
        self.document = document
        bytes = UnsafePointer(document.bytes)
        tokens = document.tokens
        self.options = options
        index = document.root
        path = document.rootPath
    }

    var codingPath: [any CodingKey] { path.components }
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try keyedContainer(keyedBy: type, at: index, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try unkeyedContainer(at: index, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func keyedContainer<Key: CodingKey>(keyedBy type: Key.Type, at index: Int, path: CodingPathNode?) throws
        -> KeyedContainer<Key>
    {
        let token = tokens[index]
        guard token.kind == .object else {
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [String: Any].self,
                    .init(
                        codingPath: path.components,
                        debugDescription: "Cannot get keyed decoding container -- found null value instead"))
            }
            throw mismatch([String: Any].self, at: index, path: path)
        }
        let verbatim = verbatimObject == index
        if verbatim { verbatimObject = -1 }
        return KeyedContainer(state: self, object: index, path: path, verbatim: verbatim)
    }

    func unkeyedContainer(at index: Int, path: CodingPathNode?) throws -> UnkeyedContainer {
        let token = tokens[index]
        guard token.kind == .array else {
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [Any].self,
                    .init(
                        codingPath: path.components,
                        debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
            }
            throw mismatch([Any].self, at: index, path: path)
        }
        return UnkeyedContainer(state: self, array: index, path: path)
    }

    /// A decoder of its own on the value at `index` (null when nil), for super decoders.
    func detached(at index: Int?, path: CodingPathNode?) -> DecodingState {
        let decoder = DecodingState(document: document, options: options)
        decoder.index = index ?? document.nullToken
        decoder.path = path
        return decoder
    }

    // MARK: Nested values

    /// Decodes `type` from the value at `index`, whose coding path is `path`: the types JSON
    /// gives a meaning of its own (dates, data, URLs, decimals, arrays, string-keyed
    /// dictionaries), then any other through its `init(from:)` with this decoder moved onto the
    /// value. The path's node is made only when something keeps it.
    func decodeNested<T: Decodable>(_ type: T.Type, at index: Int, path: PendingPath) throws -> T {
        if T.self == Date.self { return try special(T.self, at: index, path: path, decodeDate) }
        if T.self == Data.self { return try special(T.self, at: index, path: path, decodeData) }
        if T.self == URL.self { return try special(T.self, at: index, path: path, decodeURL) }
        if T.self == Decimal.self { return try special(T.self, at: index, path: path, decodeDecimal) }
        // The conformance check costs a runtime lookup: the last two types found not to be
        // arrays skip it.
        let type = ObjectIdentifier(T.self)
        if type != notArrays.0, type != notArrays.1 {
            if let array = T.self as? any DecodableArray.Type {
                return try array.decode(from: self, at: index, path: path) as! T
            }
            notArrays = (type, notArrays.0)
        }
        if options.keyDecodingStrategy.convertsKeys, T.self is any StringKeyedDictionary.Type {
            verbatimObject = index
        }
        return try moved(to: index, path: path.node()) { try T(from: self) }
    }

    /// A type with a JSON meaning of its own (`T` is `Value`). Null is never one of these,
    /// whatever the strategy (Foundation does not call a custom strategy for it either).
    @inline(__always)
    private func special<T, Value>(
        _ type: T.Type, at index: Int, path: PendingPath, _ decode: (Int, PendingPath) throws -> Value
    ) throws -> T {
        if tokens[index].kind == .null { throw mismatch(T.self, at: index, path: path.node()) }
        return unsafeBitCast(try decode(index, path), to: T.self)
    }

    /// Runs `body` with the decoder on the value at `index`, then moves it back.
    @inline(__always)
    func moved<R>(to index: Int, path: CodingPathNode?, _ body: () throws -> R) rethrows -> R {
        let saved = (self.index, self.path)
        self.index = index
        self.path = path
        defer { (self.index, self.path) = saved }
        return try body()
    }

    /// Decodes a value that a container found, choosing the fast path for the primitive
    /// types and making the coding path node (`step` under `parent`) only for the others, or
    /// for an error.
    @inline(__always)
    func decodeValue<T: Decodable>(
        _ type: T.Type, at index: Int, parent: CodingPathNode?, step: @autoclosure () -> CodingPathNode.Step
    ) throws -> T {
        do {
            if T.self == String.self { return unsafeBitCast(try unboxString(at: index), to: T.self) }
            if T.self == Int.self { return unsafeBitCast(try unboxInteger(Int.self, at: index), to: T.self) }
            if T.self == Double.self { return unsafeBitCast(try unboxDouble(at: index), to: T.self) }
            if T.self == Bool.self { return unsafeBitCast(try unboxBool(at: index), to: T.self) }
        } catch {
            throw self.error(error, at: parent.appending(step()))
        }
        return try decodeNested(type, at: index, path: PendingPath(parent: parent, step: step()))
    }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { tokens[index].kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try primitive() }
    func decode(_ type: String.Type) throws -> String { try primitive() }
    func decode(_ type: Double.Type) throws -> Double { try primitive() }
    func decode(_ type: Float.Type) throws -> Float { try primitive() }
    func decode(_ type: Int.Type) throws -> Int { try primitive() }
    func decode(_ type: Int8.Type) throws -> Int8 { try primitive() }
    func decode(_ type: Int16.Type) throws -> Int16 { try primitive() }
    func decode(_ type: Int32.Type) throws -> Int32 { try primitive() }
    func decode(_ type: Int64.Type) throws -> Int64 { try primitive() }
    func decode(_ type: UInt.Type) throws -> UInt { try primitive() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try primitive() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try primitive() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try primitive() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try primitive() }

    @inline(__always)
    private func primitive<T: JSONPrimitive>() throws -> T {
        do { return try T.unbox(from: self, at: index) } catch { throw self.error(error, at: path.components) }
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeNested(type, at: index, path: PendingPath(parent: path, step: nil))
    }
}

/// Arrays decode their elements straight from the tape into storage of the right size,
/// instead of `Array.init(from:)`'s growing appends through an unkeyed container.
protocol DecodableArray {
    static func decode(from state: DecodingState, at index: Int, path: PendingPath) throws -> Self
}

extension Array: DecodableArray where Element: Decodable {
    static func decode(from state: DecodingState, at index: Int, path: PendingPath) throws -> [Element] {
        let token = state.tokens[index]
        guard token.kind == .array else {
            // The errors Array.init(from:) would meet.
            _ = try state.unkeyedContainer(at: index, path: path.node())
            return []
        }
        let count = Int(token.length)
        var elements: [Element] = []
        elements.reserveCapacity(count)
        var element = index + 1
        if Element.self == String.self {
            // Strings need no path unless one fails.
            for position in 0..<count {
                do {
                    elements.append(unsafeBitCast(try state.unboxString(at: element), to: Element.self))
                } catch {
                    throw state.error(error, at: path.node().appending(.index(position)))
                }
                element = Int(state.tokens[element].next)
            }
            return elements
        }
        let node = path.node()
        for position in 0..<count {
            elements.append(try state.decodeValue(Element.self, at: element, parent: node, step: .index(position)))
            element = Int(state.tokens[element].next)
        }
        return elements
    }
}

/// `[String: Value]`: decoded with its keys as written whatever the key strategy.
protocol StringKeyedDictionary {}
extension Dictionary: StringKeyedDictionary where Key == String {}
