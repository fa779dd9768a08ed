/// A JSON array decoded element by element: a malformed element becomes `nil` (in
/// ``optionals``) or is left out (in ``elements``), and why is kept in ``failures`` instead of
/// failing the whole array. Use it as a response type or as a property of a model.
///
/// ```swift
/// struct Products: Resource {
///     typealias Response = LossyArray<Product>
///     var endpoint: Endpoint { Endpoint(Catalog(), path: "/products") }
/// }
/// let products = try await Products().load()
/// for failure in products.failures { logger.warning("skipped product \(failure.index): \(failure.reason)") }
/// show(products.elements)
/// ```
///
/// A value that is not an array at all still fails to decode.
public struct LossyArray<Element: Decodable & Sendable>: Decodable, Sendable {
    /// One element that did not decode.
    public struct Failure: Sendable, Hashable, CustomStringConvertible {
        /// Its position in the array.
        public var index: Int
        /// What was wrong, with the coding path inside the element.
        public var reason: String

        public var description: String { "element \(index): \(reason)" }
    }

    /// Every element in order, `nil` where one did not decode.
    public var optionals: [Element?]
    /// Why each `nil` in ``optionals`` is there, in order.
    public var failures: [Failure]

    /// The elements that decoded, in order.
    public var elements: [Element] { optionals.compactMap { $0 } }

    /// Creates a lossy array from decoded elements and failures.
    public init(optionals: [Element?], failures: [Failure] = []) {
        self.optionals = optionals
        self.failures = failures
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var optionals: [Element?] = []
        var failures: [Failure] = []
        if let count = container.count { optionals.reserveCapacity(count) }
        while !container.isAtEnd {
            let index = container.currentIndex
            do {
                optionals.append(try container.decode(Element.self))
            } catch let error as DecodingError {
                failures.append(
                    Failure(index: index, reason: Self.describe(error, below: decoder.codingPath.count + 1)))
                optionals.append(nil)
                _ = try container.decode(Skipped.self)  // move past the bad element
            }
        }
        self.optionals = optionals
        self.failures = failures
    }

    private static func describe(_ error: DecodingError, below depth: Int) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let inner = Array(context.codingPath.dropFirst(depth))
            return inner.isEmpty ? "" : " at " + JSONDecoding.describe(inner)
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing key '\(key.stringValue)'\(path(context))"
        case .typeMismatch(let type, let context): return "expected \(type)\(path(context))"
        case .valueNotFound(let type, let context): return "null where \(type) was expected\(path(context))"
        case .dataCorrupted(let context): return "invalid data\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    /// Decodes anything, so that an unkeyed container moves past an element.
    private struct Skipped: Decodable {
        init(from decoder: any Decoder) throws {}
    }
}

extension LossyArray: Equatable where Element: Equatable {}
extension LossyArray: Hashable where Element: Hashable {}
