public import FoundationEssentials

extension CourierJSONDecoder {
    /// How JSON object keys are matched to the keys a type asks for.
    public struct KeyDecodingStrategy: Sendable {
        enum Mode: Sendable {
            case useDefaultKeys
            case convertFromSnakeCase
            case custom(@Sendable ([any CodingKey]) -> any CodingKey)
        }
        let mode: Mode

        /// Whether keys are changed before matching (everything but the default).
        var convertsKeys: Bool {
            if case .useDefaultKeys = mode { return false }
            return true
        }

        /// Keys as written. The default.
        public static let useDefaultKeys = KeyDecodingStrategy(mode: .useDefaultKeys)
        /// `user_name` matches `userName`, exactly as Foundation converts: the first word
        /// lowercased, the others capitalized, leading and trailing underscores kept. Keys of
        /// `[String: Value]` dictionaries are left as written.
        public static let convertFromSnakeCase = KeyDecodingStrategy(mode: .convertFromSnakeCase)
        /// Each key converted by `convert`, given the coding path ending with the key as written.
        public static func custom(_ convert: @escaping @Sendable ([any CodingKey]) -> any CodingKey) -> Self {
            KeyDecodingStrategy(mode: .custom(convert))
        }
    }

    /// How dates are read.
    public struct DateDecodingStrategy: Sendable {
        enum Mode: Sendable {
            case deferredToDate, secondsSince1970, millisecondsSince1970, iso8601
            case formatted(@Sendable (String) throws -> Date)
            case custom(@Sendable (any Decoder) throws -> Date)
        }
        let mode: Mode

        /// `Date`'s own `Decodable`: seconds since 2001-01-01. The default.
        public static let deferredToDate = DateDecodingStrategy(mode: .deferredToDate)
        /// A number of seconds since 1970-01-01T00:00:00Z.
        public static let secondsSince1970 = DateDecodingStrategy(mode: .secondsSince1970)
        /// A number of milliseconds since 1970-01-01T00:00:00Z.
        public static let millisecondsSince1970 = DateDecodingStrategy(mode: .millisecondsSince1970)
        /// An ISO 8601 / RFC 3339 string such as `2026-11-22T12:30:00Z` or
        /// `2026-11-22T12:30:00.250+01:00`, read as Foundation reads it.
        public static let iso8601 = DateDecodingStrategy(mode: .iso8601)
        /// A string read by a parse strategy, e.g. `Date.ISO8601FormatStyle(includingFractionalSeconds: true)`
        /// or a `Date.VerbatimFormatStyle`'s.
        public static func formatted<Strategy: ParseStrategy & Sendable>(_ strategy: Strategy) -> Self
        where Strategy.ParseInput == String, Strategy.ParseOutput == Date {
            DateDecodingStrategy(mode: .formatted { try strategy.parse($0) })
        }
        /// A date made by `decode` from the decoder positioned at the value.
        public static func custom(_ decode: @escaping @Sendable (any Decoder) throws -> Date) -> Self {
            DateDecodingStrategy(mode: .custom(decode))
        }
    }

    /// How `Data` is read.
    public struct DataDecodingStrategy: Sendable {
        enum Mode: Sendable {
            case deferredToData, base64
            case custom(@Sendable (any Decoder) throws -> Data)
        }
        let mode: Mode

        /// `Data`'s own `Decodable`: an array of byte values.
        public static let deferredToData = DataDecodingStrategy(mode: .deferredToData)
        /// A Base64 string. The default.
        public static let base64 = DataDecodingStrategy(mode: .base64)
        /// Data made by `decode` from the decoder positioned at the value.
        public static func custom(_ decode: @escaping @Sendable (any Decoder) throws -> Data) -> Self {
            DataDecodingStrategy(mode: .custom(decode))
        }
    }

    /// Whether strings stand for the floating-point values JSON cannot write.
    public struct NonConformingFloatDecodingStrategy: Sendable {
        enum Mode: Sendable {
            case `throw`
            case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
        }
        let mode: Mode

        /// Only numbers are floating-point values. The default.
        public static let `throw` = NonConformingFloatDecodingStrategy(mode: .throw)
        /// These three strings are read as +infinity, -infinity and NaN.
        public static func convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String) -> Self {
            NonConformingFloatDecodingStrategy(
                mode: .convertFromString(
                    positiveInfinity: positiveInfinity, negativeInfinity: negativeInfinity, nan: nan))
        }
    }
}
