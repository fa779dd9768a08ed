import FoundationEssentials

/// Why a primitive could not be read; the container that asked turns it into a
/// `DecodingError` with the coding path (built only then).
enum UnboxFailure: Error {
    /// The value is of another kind (null included).
    case mismatch(Any.Type, Token.Kind)
    /// A number that the type cannot hold.
    case unrepresentable(Any.Type, String)
}

/// The types containers read straight from a token, through one generic path per container.
protocol JSONPrimitive {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> Self
}

extension Bool: JSONPrimitive {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> Bool {
        try state.unboxBool(at: index)
    }
}

extension String: JSONPrimitive {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> String {
        try state.unboxString(at: index)
    }
}

extension Double: JSONPrimitive {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> Double {
        try state.unboxDouble(at: index)
    }
}

extension Float: JSONPrimitive {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> Float {
        try state.unboxFloat(at: index)
    }
}

extension JSONPrimitive where Self: FixedWidthInteger {
    static func unbox(from state: DecodingState, at index: Int) throws(UnboxFailure) -> Self {
        try state.unboxInteger(Self.self, at: index)
    }
}

extension Int: JSONPrimitive {}
extension Int8: JSONPrimitive {}
extension Int16: JSONPrimitive {}
extension Int32: JSONPrimitive {}
extension Int64: JSONPrimitive {}
extension UInt: JSONPrimitive {}
extension UInt8: JSONPrimitive {}
extension UInt16: JSONPrimitive {}
extension UInt32: JSONPrimitive {}
extension UInt64: JSONPrimitive {}

/// Reading primitive values from tokens, with Foundation's errors.
extension DecodingState {
    /// The `DecodingError` for a failure at `codingPath`: `valueNotFound` for null, else
    /// `typeMismatch`; `dataCorrupted` for a number out of range.
    func error(_ failure: UnboxFailure, at codingPath: [any CodingKey]) -> DecodingError {
        switch failure {
        case .mismatch(let type, .null) where type != Bool.self:
            // (Foundation calls a null Bool a type mismatch, any other null a missing value.)
            .valueNotFound(
                type,
                .init(
                    codingPath: codingPath,
                    debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        case .mismatch(let type, let kind):
            .typeMismatch(
                type,
                .init(
                    codingPath: codingPath,
                    debugDescription: "Expected to decode \(type) but found \(kind.noun) instead."))
        case .unrepresentable(let type, let text):
            .dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "Parsed JSON number <\(text)> does not fit in \(type).")
            )
        }
    }

    func mismatch(_ type: Any.Type, at index: Int, path: CodingPathNode?) -> DecodingError {
        error(.mismatch(type, tokens[index].kind), at: path.components)
    }

    func corrupted(_ description: String, path: CodingPathNode?) -> DecodingError {
        .dataCorrupted(.init(codingPath: path.components, debugDescription: description))
    }

    func text(of token: Token) -> String {
        String(decoding: UnsafeBufferPointer(start: bytes + Int(token.offset), count: Int(token.length)), as: UTF8.self)
    }

    @inline(__always)
    func unboxString(at index: Int) throws(UnboxFailure) -> String {
        let token = tokens[index]
        guard token.kind == .string else { throw .mismatch(String.self, token.kind) }
        return StringDecoding.string(bytes, start: Int(token.offset), length: Int(token.length), flags: token.flags)
    }

    @inline(__always)
    func unboxBool(at index: Int) throws(UnboxFailure) -> Bool {
        switch tokens[index].kind {
        case .true: return true
        case .false: return false
        case let kind: throw .mismatch(Bool.self, kind)
        }
    }

    @inline(__always)
    func unboxInteger<T: FixedWidthInteger>(_ type: T.Type, at index: Int) throws(UnboxFailure) -> T {
        let token = tokens[index]
        guard token.kind == .number else { throw .mismatch(T.self, token.kind) }
        if let value: T = NumberParsing.integer(
            bytes + Int(token.offset), length: Int(token.length), fractional: token.has(Token.fractional))
        {
            return value
        }
        throw .unrepresentable(T.self, text(of: token))
    }

    @inline(__always)
    func unboxDouble(at index: Int) throws(UnboxFailure) -> Double {
        let token = tokens[index]
        if token.kind == .number {
            if let value = NumberParsing.double(bytes + Int(token.offset), length: Int(token.length)) { return value }
            throw .unrepresentable(Double.self, text(of: token))
        }
        if token.kind == .string, let value = nonConforming(token, as: Double.self) { return value }
        throw .mismatch(Double.self, token.kind)
    }

    func unboxFloat(at index: Int) throws(UnboxFailure) -> Float {
        let token = tokens[index]
        if token.kind == .number {
            if let value = NumberParsing.float(bytes + Int(token.offset), length: Int(token.length)) { return value }
            throw .unrepresentable(Float.self, text(of: token))
        }
        if token.kind == .string, let value = nonConforming(token, as: Float.self) { return value }
        throw .mismatch(Float.self, token.kind)
    }

    /// Infinity or NaN written as a string, when the strategy names them.
    private func nonConforming<F: FloatingPoint>(_ token: Token, as type: F.Type) -> F? {
        guard
            case .convertFromString(let positive, let negative, let nan) = options.nonConformingFloatDecodingStrategy
                .mode
        else {
            return nil
        }
        let string = StringDecoding.string(
            bytes, start: Int(token.offset), length: Int(token.length), flags: token.flags)
        if string == positive { return F.infinity }
        if string == negative { return -F.infinity }
        if string == nan { return F.nan }
        return nil
    }

    /// Reads a primitive for a special type, making the coding path only for an error.
    @inline(__always)
    func read<T>(at path: PendingPath, _ body: () throws(UnboxFailure) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw self.error(error, at: path.node().components)
        }
    }

    // MARK: Types with a JSON meaning of their own

    func decodeDate(at index: Int, path: PendingPath) throws -> Date {
        switch options.dateDecodingStrategy.mode {
        case .deferredToDate:
            return try moved(to: index, path: path.node()) { try Date(from: self) }
        case .secondsSince1970:
            return Date(
                timeIntervalSince1970: try read(at: path) { () throws(UnboxFailure) in try unboxDouble(at: index) })
        case .millisecondsSince1970:
            return Date(
                timeIntervalSince1970: try read(at: path) { () throws(UnboxFailure) in try unboxDouble(at: index) }
                    / 1000)
        case .iso8601:
            let token = tokens[index]
            guard token.kind == .string else { throw mismatch(String.self, at: index, path: path.node()) }
            if token.flags == 0, let date = ISO8601.date(bytes + Int(token.offset), length: Int(token.length)) {
                return date
            }
            let string = try read(at: path) { () throws(UnboxFailure) in try unboxString(at: index) }
            guard let date = try? Date.ISO8601FormatStyle().parse(string) else {
                throw corrupted("Expected date string to be ISO8601-formatted.", path: path.node())
            }
            return date
        case .formatted(let parse):
            let string = try read(at: path) { () throws(UnboxFailure) in try unboxString(at: index) }
            guard let date = try? parse(string) else {
                throw corrupted("Date string does not match format expected by formatter.", path: path.node())
            }
            return date
        case .custom(let decode):
            return try moved(to: index, path: path.node()) { try decode(self) }
        }
    }

    func decodeData(at index: Int, path: PendingPath) throws -> Data {
        switch options.dataDecodingStrategy.mode {
        case .deferredToData:
            return try moved(to: index, path: path.node()) { try Data(from: self) }
        case .base64:
            let string = try read(at: path) { () throws(UnboxFailure) in try unboxString(at: index) }
            guard let data = Data(base64Encoded: string) else {
                throw corrupted("Encountered Data is not valid Base64.", path: path.node())
            }
            return data
        case .custom(let decode):
            return try moved(to: index, path: path.node()) { try decode(self) }
        }
    }

    func decodeURL(at index: Int, path: PendingPath) throws -> URL {
        let string = try read(at: path) { () throws(UnboxFailure) in try unboxString(at: index) }
        guard let url = URL(string: string) else { throw corrupted("Invalid URL string.", path: path.node()) }
        return url
    }

    func decodeDecimal(at index: Int, path: PendingPath) throws -> Decimal {
        let token = tokens[index]
        guard token.kind == .number else { throw mismatch(Decimal.self, at: index, path: path.node()) }
        guard let decimal = Decimal(string: text(of: token)) else {
            throw corrupted("Parsed JSON number <\(text(of: token))> does not fit in Decimal.", path: path.node())
        }
        return decimal
    }
}
