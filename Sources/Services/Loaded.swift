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
    /// Whether this load shared its transfer with identical loads in flight.
    public var wasCoalesced: Bool
    /// The coordinator's id for this load, as in its events and log metadata.
    public var requestID: UInt64
}

/// Where a loaded value came from.
public enum ResponseSource: Sendable, Hashable {
    /// A transfer over the network.
    case network
}
