/// The unkeyed container of one JSON array: a cursor over its elements.
struct UnkeyedContainer: UnkeyedDecodingContainer {
    let state: DecodingState
    let path: CodingPathNode?
    /// The token of the next element.
    private var element: Int
    let count: Int?
    private(set) var currentIndex = 0

    init(state: DecodingState, array: Int, path: CodingPathNode?) {
        self.state = state
        self.path = path
        element = array + 1
        count = Int(state.tokens[array].length)
    }

    var codingPath: [any CodingKey] { path.components }
    var isAtEnd: Bool { currentIndex >= count! }

    /// The next element's token; at the end, the `valueNotFound` Foundation throws.
    @inline(__always)
    private func next(_ type: Any.Type) throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: path.appending(.index(currentIndex)), debugDescription: "Unkeyed container is at end."))
        }
        return element
    }

    /// Moves past the element just decoded.
    @inline(__always)
    private mutating func advance() {
        element = Int(state.tokens[element].next)
        currentIndex += 1
    }

    /// The error for a primitive that could not be read (the coding path is built only now).
    private func failure(_ failure: UnboxFailure) -> DecodingError {
        state.error(failure, at: path.appending(.index(currentIndex)))
    }

    mutating func decodeNil() throws -> Bool {
        guard state.tokens[try next(Never?.self)].kind == .null else { return false }
        advance()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try primitive() }
    mutating func decode(_ type: String.Type) throws -> String { try primitive() }
    mutating func decode(_ type: Double.Type) throws -> Double { try primitive() }
    mutating func decode(_ type: Float.Type) throws -> Float { try primitive() }
    mutating func decode(_ type: Int.Type) throws -> Int { try primitive() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try primitive() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try primitive() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try primitive() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try primitive() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try primitive() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try primitive() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try primitive() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try primitive() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try primitive() }

    /// Reads a primitive and moves on, building the coding path only for an error.
    @inline(__always)
    private mutating func primitive<T: JSONPrimitive>() throws -> T {
        let element = try next(T.self)
        do {
            let value = try T.unbox(from: state, at: element)
            advance()
            return value
        } catch {
            throw failure(error)
        }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try state.decodeValue(type, at: try next(type), parent: path, step: .index(currentIndex))
        advance()
        return value
    }

    mutating func decodeIfPresent<T: Decodable>(_ type: T.Type) throws -> T? {
        if try decodeNil() { return nil }
        return try decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        let container = try state.keyedContainer(
            keyedBy: type, at: try next([String: Any].self),
            path: CodingPathNode(parent: path, step: .index(currentIndex)))
        advance()
        return KeyedDecodingContainer(container)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try state.unkeyedContainer(
            at: try next([Any].self), path: CodingPathNode(parent: path, step: .index(currentIndex)))
        advance()
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = state.detached(
            at: try next((any Decoder).self), path: CodingPathNode(parent: path, step: .index(currentIndex)))
        advance()
        return decoder
    }
}
