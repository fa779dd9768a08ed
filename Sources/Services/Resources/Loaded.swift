public import FoundationEssentials
public import HTTPTypes

/// A loaded value with the response it came from.
public struct Loaded<Value: Sendable>: Sendable {
    /// The decoded value.
    public var value: Value
    /// The response head (status and header fields).
    public var response: HTTPResponse
    /// What the transfer cost (zero when no transfer was made).
    public var metrics: TransferMetrics
    /// Where the value came from.
    public var source: ResponseSource
    /// Whether the value is past its freshness: served by `stale-while-revalidate` (a refresh
    /// runs in the background) or because the network failed.
    public var isStale: Bool
    /// When the value came from the cache because the network failed (offline fallback,
    /// `stale-if-error`), the failure; nil otherwise.
    public var networkError: ServiceError?
    /// Whether this load shared its transfer with identical loads in flight.
    public var wasCoalesced: Bool
    /// The coordinator's id for this load, as in its events and log metadata.
    public var requestID: UInt64
    /// For a value from the cache, the stored response's current age (RFC 9111, section 4.2.3):
    /// its age when it arrived (its `Age`, its `Date`, the round trip) plus the time it has been
    /// stored. The response carries it, in whole seconds, as its `Age` field. Nil from the network.
    public var age: Duration?
    /// For a value from the cache, when the stored response arrived (or a 304 or `HEAD` last
    /// confirmed it). Nil from the network.
    public var storedAt: Date?
}

/// Where a loaded value came from.
///
/// A struct over a private enum, so that a new source (a new cache tier) never breaks a
/// caller's exhaustive `switch`: compare with `==`, or switch with a `default`.
public struct ResponseSource: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable {
        case network, memory, disk, shared, revalidated
    }

    private let base: Base

    /// A transfer over the network.
    public static let network = ResponseSource(base: .network)
    /// The memory tier of the cache, with no request made.
    public static let memory = ResponseSource(base: .memory)
    /// The disk tier (a store local to the machine) of the cache, with no request made.
    public static let disk = ResponseSource(base: .disk)
    /// The shared tier of the cache (a store the fleet shares), with no request made.
    public static let shared = ResponseSource(base: .shared)
    /// The cache, after the server confirmed with a 304 that it is still current.
    public static let revalidated = ResponseSource(base: .revalidated)

    /// Whether the value came from the cache (with or without a revalidation).
    public var isCache: Bool { self != .network }

    /// The source's name (`network`, `memory`, `disk`, `shared`, `revalidated`), usable as a log field.
    public var description: String { base.rawValue }

    private init(base: Base) { self.base = base }

    init(_ tier: CacheTier) {
        switch tier {
        case .memory: self = .memory
        case .shared: self = .shared
        default: self = .disk
        }
    }
}
