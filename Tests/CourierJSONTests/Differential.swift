import CourierJSON
import CourierTestServer
import Foundation
import Testing

/// Both decoders configured alike.
struct DecoderPair {
    var ours = CourierJSONDecoder()
    var foundation = JSONDecoder()

    init() {}

    init(snakeCase: Bool = false, dates: DateStrategy = .deferred) {
        if snakeCase {
            ours.keyDecodingStrategy = .convertFromSnakeCase
            foundation.keyDecodingStrategy = .convertFromSnakeCase
        }
        switch dates {
        case .deferred: break
        case .iso8601:
            ours.dateDecodingStrategy = .iso8601
            foundation.dateDecodingStrategy = .iso8601
        case .seconds:
            ours.dateDecodingStrategy = .secondsSince1970
            foundation.dateDecodingStrategy = .secondsSince1970
        case .milliseconds:
            ours.dateDecodingStrategy = .millisecondsSince1970
            foundation.dateDecodingStrategy = .millisecondsSince1970
        }
    }

    enum DateStrategy { case deferred, iso8601, seconds, milliseconds }

    func userInfo(_ key: CodingUserInfoKey, _ value: any Sendable) -> DecoderPair {
        var pair = self
        pair.ours.userInfo[key] = value
        let foundation = JSONDecoder()
        foundation.keyDecodingStrategy = self.foundation.keyDecodingStrategy
        foundation.dateDecodingStrategy = self.foundation.dateDecodingStrategy
        foundation.userInfo = self.foundation.userInfo
        foundation.userInfo[key] = value
        pair.foundation = foundation
        return pair
    }

    func outcomes<T: Decodable & Equatable>(_ type: T.Type, _ json: String) -> (
        ours: Outcome<T>, foundation: Outcome<T>
    ) {
        outcomes(type, Data(json.utf8))
    }

    func outcomes<T: Decodable & Equatable>(_ type: T.Type, _ data: Data) -> (ours: Outcome<T>, foundation: Outcome<T>)
    {
        (Outcome { try ours.decode(T.self, from: data) }, Outcome { try foundation.decode(T.self, from: data) })
    }

    /// Expects the same value, or the same error case at the same coding path.
    func expectSame<T: Decodable & Equatable>(
        _ type: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (ours, foundation) = outcomes(type, json)
        #expect(
            ours.matches(foundation), "\(json)\nours:       \(ours)\nFoundation: \(foundation)",
            sourceLocation: sourceLocation)
    }
}

/// What a decode gave, in a form two decoders' results can be compared in.
enum Outcome<T: Equatable>: CustomStringConvertible {
    case value(T)
    case error(String, path: [String], description: String)
    case otherError(String)

    init(_ body: () throws -> T) {
        do {
            self = .value(try body())
        } catch let error as DecodingError {
            let (name, context): (String, DecodingError.Context) =
                switch error {
                case .typeMismatch(let type, let context): ("typeMismatch(\(type))", context)
                case .valueNotFound(let type, let context): ("valueNotFound(\(type))", context)
                case .keyNotFound(let key, let context): ("keyNotFound(\(key.stringValue))", context)
                case .dataCorrupted(let context): ("dataCorrupted", context)
                @unknown default: ("unknown", DecodingError.Context(codingPath: [], debugDescription: ""))
                }
            self = .error(
                name, path: context.codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue },
                description: context.debugDescription)
        } catch {
            self = .otherError(String(describing: error))
        }
    }

    var isDataCorrupted: Bool {
        if case .error("dataCorrupted", _, _) = self { return true }
        return false
    }

    var value: T? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// Same value; or the same error case and path. One documented difference: where
    /// Foundation reports `dataCorrupted` at an enclosing container (a date that is not ISO
    /// 8601, a number a type cannot hold), we report the value's own path, which extends
    /// Foundation's.
    func matches(_ foundation: Outcome<T>) -> Bool {
        switch (self, foundation) {
        case (.value(let ours), .value(let theirs)): return ours == theirs
        case (.error(let ours, let ourPath, _), .error(let theirs, let theirPath, _)):
            guard ours == theirs else { return false }
            if ours == "dataCorrupted" { return ourPath.starts(with: theirPath) }
            return ourPath == theirPath
        case (.otherError(let ours), .otherError(let theirs)): return ours == theirs
        default: return false
        }
    }

    var description: String {
        switch self {
        case .value(let value): "value \(value)"
        case .error(let name, let path, let text): "\(name) at \(path): \(text)"
        case .otherError(let text): "error \(text)"
        }
    }
}
