internal import CourierCore
public import HTTPTypes

/// Sends an API key in a header field or a query item.
///
/// ```swift
/// let header = try APIKeyDecorator(key: "k-123", in: .header("X-API-Key"))
/// let query = try APIKeyDecorator(key: "k-123", in: .queryItem("api_key"))
/// ```
///
/// The key is kept out of `description`, logs (Courier logs URLs without their query) and,
/// by default, HAR recordings (`HARRecorder` redacts `X-API-Key` and the usual key query
/// items; name others in its `redactedHeaders`/`redactedQueryItems`). A key in a header
/// partitions the cache when the header is one of the coordinator's
/// ``RequestCoordinator/Configuration/credentialHeaders`` (`X-API-Key` is by default); a key
/// in the query partitions it through the URL, which is part of every cache key.
public struct APIKeyDecorator: RequestDecorator, CustomStringConvertible, CustomDebugStringConvertible {
    /// Where the key goes.
    public struct Placement: Sendable, Hashable {
        enum Kind: Hashable { case header, queryItem }
        let kind: Kind
        /// The header field name or query item name.
        public let name: String

        /// In the header field `name` (for example `X-API-Key`).
        public static func header(_ name: String) -> Placement { Placement(kind: .header, name: name) }
        /// In the query item `name` (for example `api_key`), percent-encoded and appended to the
        /// request's query (an item of the same name already there is replaced).
        public static func queryItem(_ name: String) -> Placement { Placement(kind: .queryItem, name: name) }
    }

    /// Where the key goes.
    let placement: Placement
    private let key: String
    private let field: HTTPField.Name?

    /// Creates the decorator, or throws `invalidRequest` when the key contains CR, LF or NUL,
    /// or the name is not a valid header field name (or is empty, for a query item).
    public init(key: String, in placement: Placement) throws {
        if BasicAuthDecorator.hasControl(key) {
            throw ServiceError(.invalidRequest, "The API key contains CR, LF or NUL.")
        }
        switch placement.kind {
        case .header:
            guard let name = HTTPField.Name(placement.name) else {
                throw ServiceError(.invalidRequest, "'\(placement.name)' is not a valid header field name.")
            }
            field = name
        case .queryItem:
            if placement.name.isEmpty || BasicAuthDecorator.hasControl(placement.name) {
                throw ServiceError(.invalidRequest, "The API key query item needs a name without CR, LF or NUL.")
            }
            field = nil
        }
        self.key = key
        self.placement = placement
    }

    public func decorate(_ request: inout HTTPRequest) async throws {
        if let field {
            request.headerFields[field] = key
            return
        }
        let target = request.path ?? "/"
        let mark = target.firstIndex(of: "?")
        let path = mark.map { target[..<$0] } ?? target[...]
        let name = PercentEncoding.encodeQueryComponent(placement.name)
        var items = mark.map { target[target.index(after: $0)...].split(separator: "&").map(String.init) } ?? []
        items.removeAll { $0 == name || $0.hasPrefix(name + "=") }
        items.append("\(name)=\(PercentEncoding.encodeQueryComponent(key))")
        request.path = path + "?" + items.joined(separator: "&")
    }

    public var description: String {
        switch placement.kind {
        case .header: "APIKeyDecorator(header: \(placement.name), key: <redacted>)"
        case .queryItem: "APIKeyDecorator(queryItem: \(placement.name), key: <redacted>)"
        }
    }
    public var debugDescription: String { description }
}
