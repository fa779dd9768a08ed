/// Where a cached value was found or stored.
///
/// A struct over a private enum rather than an enum, so that adding a tier never breaks a caller's exhaustive `switch`. Compare with `==` or switch with a
/// `default`.
public struct CacheTier: Sendable, Hashable, CustomStringConvertible {
    package enum Base: String, Sendable, Hashable {
        case memory
        case disk
        case shared
    }

    package let base: Base

    package init(_ base: Base) { self.base = base }

    /// The in-memory LRU.
    public static let memory = CacheTier(.memory)
    /// A store local to this process's machine behind memory (the disk cache, or a plugged-in
    /// ``CacheStore`` that says nothing else).
    public static let disk = CacheTier(.disk)
    /// A store the processes of a fleet share (a database, a cache service).
    public static let shared = CacheTier(.shared)

    /// The tiers a policy must name for this tier to be read and written.
    package var policyTiers: CachePolicy.Tiers {
        switch base {
        case .memory: .memory
        case .disk: .disk
        case .shared: .shared
        }
    }

    /// The tier's name (`memory`, `disk`, `shared`), stable enough for a log field or a metric label.
    public var description: String { base.rawValue }
}
