/// The keyed container of one JSON object. A class: `KeyedDecodingContainer`'s box copies
/// its container for every call, and copying one reference is cheaper than copying a generic
/// struct holding two.
final class KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: DecodingState
    let object: Int
    let path: CodingPathNode?
    /// Keys as written, whatever the key strategy (a `[String: Value]`'s own keys).
    let verbatim: Bool

    init(state: DecodingState, object: Int, path: CodingPathNode?, verbatim: Bool) {
        self.state = state
        self.object = object
        self.path = path
        self.verbatim = verbatim
    }

    var codingPath: [any CodingKey] { path.components }

    var allKeys: [Key] {
        state.keys(of: object, verbatim: verbatim, path: path).compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    @inline(__always)
    private func find(_ key: Key) -> Int? {
        state.value(in: object, forKey: key.stringValue, verbatim: verbatim, path: path)
    }

    @inline(__always)
    private func require(_ key: Key) throws -> Int {
        guard let value = find(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: path.components,
                    debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { state.tokens[try require(key)].kind == .null }

    /// The error for a primitive that could not be read (the coding path is built only now).
    private func failure(_ failure: UnboxFailure, _ key: Key) -> DecodingError {
        state.error(failure, at: path.appending(key))
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try primitive(key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try primitive(key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try primitive(key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try primitive(key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try primitive(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try primitive(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try primitive(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try primitive(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try primitive(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try primitive(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try primitive(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try primitive(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try primitive(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try primitive(key) }

    /// Reads a primitive, building the coding path only for an error.
    @inline(__always)
    private func primitive<T: JSONPrimitive>(_ key: Key) throws -> T {
        let value = try require(key)
        do { return try T.unbox(from: state, at: value) } catch { throw failure(error, key) }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try state.decodeValue(type, at: try require(key), parent: path, step: .key(key))
    }

    // One lookup for an optional value instead of the default's three (contains, decodeNil,
    // decode): a missing key or null is nil.

    @inline(__always)
    private func present(_ key: Key) -> Int? {
        guard let value = find(key), state.tokens[value].kind != .null else { return nil }
        return value
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optionalPrimitive(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optionalPrimitive(key) }

    @inline(__always)
    private func optionalPrimitive<T: JSONPrimitive>(_ key: Key) throws -> T? {
        guard let value = present(key) else { return nil }
        do { return try T.unbox(from: state, at: value) } catch { throw failure(error, key) }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = present(key) else { return nil }
        return try state.decodeValue(type, at: value, parent: path, step: .key(key))
    }

    // MARK: Nested containers and super decoders

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        guard let value = find(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: path.components,
                    debugDescription:
                        "Cannot get nested keyed container -- no value found for key \(key) (\"\(key.stringValue)\")"))
        }
        return KeyedDecodingContainer(
            try state.keyedContainer(keyedBy: type, at: value, path: CodingPathNode(parent: path, key: key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let value = find(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: path.components,
                    debugDescription:
                        "Cannot get nested unkeyed container -- no value found for key \(key) (\"\(key.stringValue)\")")
            )
        }
        return try state.unkeyedContainer(at: value, path: CodingPathNode(parent: path, key: key))
    }

    func superDecoder() throws -> any Decoder { try superDecoder(named: JSONKey.super) }

    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder(named: key) }

    /// A decoder of its own on the value for `key` (null when the key is missing).
    private func superDecoder(named key: any CodingKey) throws -> any Decoder {
        let value = state.value(in: object, forKey: key.stringValue, verbatim: verbatim, path: path)
        return state.detached(at: value, path: CodingPathNode(parent: path, key: key))
    }
}
