import FoundationEssentials

/// A parsed document: a private copy of the bytes (followed by zero padding) and the token
/// tape. Decoders and containers keep it alive, so a `Decoder` a model keeps past its
/// `init(from:)` still reads valid memory.
final class JSONDocument {
    let bytes: UnsafeMutablePointer<UInt8>
    let count: Int
    let tokens: UnsafeMutablePointer<Token>
    let tokenCount: Int
    /// The token of the value to decode.
    let root: Int
    /// A null token after the document's own.
    let nullToken: Int
    /// The coding path to the root (the key path, if any).
    let rootPath: CodingPathNode?

    convenience init(copying data: Data, keyPath: [String], options: CourierJSONDecoder) throws {
        try self.init(count: data.count, keyPath: keyPath, options: options) { buffer in
            data.withUnsafeBytes { source in
                if let base = source.baseAddress { buffer.copyMemory(from: base, byteCount: source.count) }
            }
        }
    }

    convenience init(copying bytes: some Collection<UInt8>, keyPath: [String], options: CourierJSONDecoder) throws {
        try self.init(count: bytes.count, keyPath: keyPath, options: options) { buffer in
            _ = UnsafeMutableBufferPointer(start: buffer.assumingMemoryBound(to: UInt8.self), count: bytes.count)
                .initialize(from: bytes)
        }
    }

    private init(count: Int, keyPath: [String], options: CourierJSONDecoder, fill: (UnsafeMutableRawPointer) -> Void)
        throws
    {
        guard count < Int(UInt32.max) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "The document is larger than 4 GiB."))
        }
        let raw = UnsafeMutableRawPointer.allocate(byteCount: count + JSONParser.padding, alignment: 8)
        fill(raw)
        (raw + count).initializeMemory(as: UInt8.self, repeating: 0, count: JSONParser.padding)
        bytes = raw.assumingMemoryBound(to: UInt8.self)
        self.count = count

        let comparison: JSONParser.KeyComparison =
            switch options.keyDecodingStrategy.mode {
            case .useDefaultKeys: .exact
            case .convertFromSnakeCase: .snakeCase
            case .custom: .opaque
            }
        var parser = JSONParser(bytes: bytes, count: count, keys: comparison)
        var outcome = KeyPathOutcome.found(token: 0)
        do {
            if keyPath.isEmpty {
                try parser.parseDocument()
            } else {
                outcome = try parser.parseDocument(keyPath: keyPath)
            }
        } catch {
            raw.deallocate()
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [], debugDescription: "The given data was not valid JSON.", underlyingError: error))
        }
        // A null for super decoders of missing keys.
        nullToken = parser.tokens.append(.null, offset: 0)
        let tape = parser.tokens.take()
        tokens = tape.base
        tokenCount = tape.count

        var path: CodingPathNode? = nil
        var failure: DecodingError? = nil
        switch outcome {
        case .found(let token):
            root = token
            for key in keyPath { path = CodingPathNode(parent: path, key: JSONKey(stringValue: key)) }
        case .missing(let level):
            root = 0
            for key in keyPath[..<level] { path = CodingPathNode(parent: path, key: JSONKey(stringValue: key)) }
            failure = DecodingError.keyNotFound(
                JSONKey(stringValue: keyPath[level]),
                .init(
                    codingPath: path.components,
                    debugDescription: "No value associated with key \"\(keyPath[level])\" on the key path."))
        case .notObject(let level, let kind):
            root = 0
            for key in keyPath[..<level] { path = CodingPathNode(parent: path, key: JSONKey(stringValue: key)) }
            failure = DecodingError.typeMismatch(
                [String: Any].self,
                .init(
                    codingPath: path.components,
                    debugDescription: "Expected to decode Dictionary<String, Any> but found \(kind.noun) instead."))
        }
        rootPath = path
        // Thrown once every property is set, so that deinit frees the buffers.
        if let failure { throw failure }
    }

    deinit {
        bytes.deallocate()
        tokens.deallocate()
    }

    func decode<T: Decodable>(_ type: T.Type, options: CourierJSONDecoder) throws -> T {
        let state = DecodingState(document: self, options: options)
        return try state.decodeNested(type, at: root, path: PendingPath(parent: rootPath, step: nil))
    }
}

extension Token.Kind {
    /// How Foundation names a JSON value's kind in a type mismatch.
    var noun: String {
        switch self {
        case .null: "null"
        case .true, .false: "bool"
        case .number: "number"
        case .string: "a string"
        case .object: "a dictionary"
        case .array: "an array"
        }
    }
}
