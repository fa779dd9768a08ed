/// How a resource uses the coordinator's cache (a ``TieredCache``). With no cache configured,
/// every policy behaves as ``networkOnly`` and ``cacheOnly(tiers:)`` fails with `cacheMiss`.
///
/// An explicit app policy (``cacheElseNetwork(maxAge:tiers:)``, ``networkElseCache(tiers:)``,
/// ``cacheOnly(tiers:)``) decides freshness itself but never stores a `no-store` response;
/// ``http(tiers:)`` follows the response's headers as a private cache (RFC 9111).
public struct CachePolicy: Sendable, Hashable, CustomStringConvertible {
    package enum Mode: Sendable, Hashable {
        case networkOnly
        case cacheElseNetwork(maxAge: Duration)
        case cacheOnly
        case networkElseCache
        case http
    }

    /// Which tiers a policy reads and writes.
    public struct Tiers: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The in-memory LRU.
        public static let memory = Tiers(rawValue: 1)
        /// The on-disk store.
        public static let disk = Tiers(rawValue: 2)
        /// Memory in front of disk.
        public static let all: Tiers = [.memory, .disk]
    }

    package let mode: Mode
    /// The tiers this policy reads and writes.
    public let tiers: Tiers

    /// Whether loads read or write the cache at all.
    package var usesCache: Bool { mode != .networkOnly && !tiers.isEmpty }

    /// Always the network; nothing is stored (the default).
    public static let networkOnly = CachePolicy(mode: .networkOnly, tiers: [])

    /// A stored value younger than `maxAge`, else the network (whose response is stored).
    public static func cacheElseNetwork(maxAge: Duration, tiers: Tiers = .all) -> CachePolicy {
        CachePolicy(mode: .cacheElseNetwork(maxAge: maxAge), tiers: tiers)
    }

    /// Only a stored value; a miss is a `cacheMiss` error.
    public static func cacheOnly(tiers: Tiers = .all) -> CachePolicy { CachePolicy(mode: .cacheOnly, tiers: tiers) }

    /// The network, falling back to a stored value when the network fails (offline use).
    public static func networkElseCache(tiers: Tiers = .all) -> CachePolicy {
        CachePolicy(mode: .networkElseCache, tiers: tiers)
    }

    /// HTTP caching as a private cache (RFC 9111): freshness, validators, `Vary`.
    public static func http(tiers: Tiers = .all) -> CachePolicy { CachePolicy(mode: .http, tiers: tiers) }

    public var description: String {
        switch mode {
        case .networkOnly: "networkOnly"
        case .cacheElseNetwork(let maxAge): "cacheElseNetwork(maxAge: \(maxAge))"
        case .cacheOnly: "cacheOnly"
        case .networkElseCache: "networkElseCache"
        case .http: "http"
        }
    }
}
