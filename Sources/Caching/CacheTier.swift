/// Where a cached value was found or stored.
///
/// A struct over a private enum rather than an enum, so that adding a tier (a shared cache is
/// planned) never breaks a caller's exhaustive `switch`. Compare with `==` or switch with a
/// `default`.
public struct CacheTier: Sendable, Hashable, CustomStringConvertible {
    package enum Base: String, Sendable, Hashable {
        case memory
        case disk
    }

    package let base: Base

    package init(_ base: Base) { self.base = base }

    /// The in-memory LRU.
    public static let memory = CacheTier(.memory)
    /// The store behind it (the disk cache, or a plugged-in ``CacheStore``).
    public static let disk = CacheTier(.disk)

    /// The tier's name (`memory`, `disk`), stable enough for a log field or a metric label.
    public var description: String { base.rawValue }
}
