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
        /// The stores local to the machine (``CacheTier/disk``).
        public static let disk = Tiers(rawValue: 2)
        /// The stores the fleet shares (``CacheTier/shared``).
        public static let shared = Tiers(rawValue: 4)
        /// Every tier the cache has: memory, then disk, then shared. A policy's default, so a
        /// shared store added to the chain serves every resource that did not name its tiers;
        /// a resource that must stay on the machine names `[.memory, .disk]`.
        public static let all: Tiers = [.memory, .disk, .shared]
    }

    package let mode: Mode
    /// The tiers this policy reads and writes.
    package let tiers: Tiers
    /// How loads under this policy collapse across the fleet (nil: they do not).
    public private(set) var fleetCollapsing: FleetCollapsing? = nil
    /// How long past its freshness a stored response may answer when the origin cannot be
    /// reached (nil: only as `stale-if-error` allows). See ``servingStaleWhenUnreachable(upTo:)``.
    package private(set) var staleWhenUnreachable: Duration? = nil

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

    /// This policy, with a load that misses every tier collapsed across the fleet (see
    /// ``FleetCollapsing``): one process takes a lease of `lease` on the key and fetches; the
    /// others wait for its entry up to `wait`, then fetch themselves.
    public func collapsingAcrossFleet(wait: Duration = .seconds(5), lease: Duration = .seconds(10)) -> CachePolicy {
        var policy = self
        policy.fleetCollapsing = FleetCollapsing(wait: wait, lease: lease)
        return policy
    }

    /// This ``http(tiers:)`` policy, answering with a stored response up to `maximumStaleness`
    /// past its freshness when the origin cannot be reached: no connection or name, a timeout,
    /// the connection closed before a response head (RFC 9111, section 4.2.4, lets a
    /// disconnected cache do so). A response that says `must-revalidate` or `no-cache` (in a
    /// shared tier also `proxy-revalidate` or `s-maxage`) never answers so, nor does any to a
    /// request with `no-cache`, `max-age` or `min-fresh`; a request's `max-stale=N` lowers the
    /// allowance to N, a response's `stale-if-error` window applies when longer.
    /// `Loaded` then says `isStale`, with the failure in `networkError`. Other policies ignore it
    /// (``networkElseCache(tiers:)`` answers from the cache after any failure).
    ///
    /// ```swift
    /// var cachePolicy: CachePolicy { .http().servingStaleWhenUnreachable(upTo: .seconds(3600)) }
    /// ```
    public func servingStaleWhenUnreachable(upTo maximumStaleness: Duration = .seconds(86_400)) -> CachePolicy {
        var policy = self
        policy.staleWhenUnreachable = max(.zero, maximumStaleness)
        return policy
    }

    /// ``staleWhenUnreachable`` in seconds.
    package var staleAllowanceWhenUnreachable: Double? {
        staleWhenUnreachable.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    public var description: String {
        let name =
            switch mode {
            case .networkOnly: "networkOnly"
            case .cacheElseNetwork(let maxAge): "cacheElseNetwork(maxAge: \(maxAge))"
            case .cacheOnly: "cacheOnly"
            case .networkElseCache: "networkElseCache"
            case .http: "http"
            }
        var text = name
        if let staleness = staleWhenUnreachable { text += ".servingStaleWhenUnreachable(upTo: \(staleness))" }
        if let fleet = fleetCollapsing {
            text += ".collapsingAcrossFleet(wait: \(fleet.wait), lease: \(fleet.lease))"
        }
        return text
    }
}
