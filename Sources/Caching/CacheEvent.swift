/// Something the cache did, reported on the coordinator's event stream. Keys are reported
/// without query or credentials (``CacheKey/description``).
///
/// A struct over a private enum rather than an enum, so that a new event never breaks a
/// caller's exhaustive `switch`. Switch on ``name`` (with a `default`) and read the fields
/// that event has; the others are `nil`:
///
/// ```swift
/// switch event.name {
/// case .hit: print("hit in \(event.tier!)")
/// case .stored: print("stored \(event.bytes!) bytes")
/// default: break
/// }
/// ```
public struct CacheEvent: Sendable, Hashable, CustomStringConvertible {
    package enum Base: Sendable, Hashable {
        case hit(CacheTier, key: String)
        case miss(key: String)
        case stored(CacheTier, key: String, bytes: Int)
        case revalidated(key: String, notModified: Bool)
        case servedAfterError(CacheTier, key: String)
        case evicted(CacheTier, count: Int, bytes: Int)
        case invalidated(key: String)
        case purged(CacheTier, count: Int)
        case storeFailed(CacheTier, reason: String)
        case leaseTaken(key: String)
        case leaseWaited(key: String)
        case leaseWaitTimedOut(key: String)
        case leaseReleasedUnstored(key: String)
    }

    /// The event, as a value to switch on (inside the package).
    package let base: Base

    package init(_ base: Base) { self.base = base }

    /// A stored response answered a load.
    package static func hit(_ tier: CacheTier, key: String) -> CacheEvent { CacheEvent(.hit(tier, key: key)) }
    /// Nothing usable was stored.
    package static func miss(key: String) -> CacheEvent { CacheEvent(.miss(key: key)) }
    /// A response was stored in `tier` (`bytes` is its cost).
    package static func stored(_ tier: CacheTier, key: String, bytes: Int) -> CacheEvent {
        CacheEvent(.stored(tier, key: key, bytes: bytes))
    }
    /// A conditional request revalidated a stored response; `notModified` when the server said 304.
    package static func revalidated(key: String, notModified: Bool) -> CacheEvent {
        CacheEvent(.revalidated(key: key, notModified: notModified))
    }
    /// A stored response answered because the network failed (offline fallback, `stale-if-error`).
    package static func servedAfterError(_ tier: CacheTier, key: String) -> CacheEvent {
        CacheEvent(.servedAfterError(tier, key: key))
    }
    /// Entries left `tier` to stay within its limits.
    package static func evicted(_ tier: CacheTier, count: Int, bytes: Int) -> CacheEvent {
        CacheEvent(.evicted(tier, count: count, bytes: bytes))
    }
    /// An entry was removed: an unsafe method succeeded on its URL, or it could not be decoded.
    package static func invalidated(key: String) -> CacheEvent { CacheEvent(.invalidated(key: key)) }
    /// `tier` removed or marked stale `count` entries a purge named.
    package static func purged(_ tier: CacheTier, count: Int) -> CacheEvent { CacheEvent(.purged(tier, count: count)) }
    /// A store failed; the load went on without it.
    package static func storeFailed(_ tier: CacheTier, reason: String) -> CacheEvent {
        CacheEvent(.storeFailed(tier, reason: reason))
    }
    /// Fleet-wide collapsing: this process took the lease on the key and fetches for the fleet.
    package static func leaseTaken(key: String) -> CacheEvent { CacheEvent(.leaseTaken(key: key)) }
    /// Fleet-wide collapsing: another process held the lease, and the entry it stored answered.
    package static func leaseWaited(key: String) -> CacheEvent { CacheEvent(.leaseWaited(key: key)) }
    /// Fleet-wide collapsing: another process held the lease and stored nothing within the
    /// policy's wait, so this one fetched itself.
    package static func leaseWaitTimedOut(key: String) -> CacheEvent { CacheEvent(.leaseWaitTimedOut(key: key)) }
    /// Fleet-wide collapsing: another process gave the lease back with nothing stored (its
    /// answer could not be stored), and said so: this one fetched at once.
    package static func leaseReleasedUnstored(key: String) -> CacheEvent {
        CacheEvent(.leaseReleasedUnstored(key: key))
    }

    /// Which event this is.
    public var name: Name {
        switch base {
        case .hit: .hit
        case .miss: .miss
        case .stored: .stored
        case .revalidated: .revalidated
        case .servedAfterError: .servedAfterError
        case .evicted: .evicted
        case .invalidated: .invalidated
        case .purged: .purged
        case .storeFailed: .storeFailed
        case .leaseTaken: .leaseTaken
        case .leaseWaited: .leaseWaited
        case .leaseWaitTimedOut: .leaseWaitTimedOut
        case .leaseReleasedUnstored: .leaseReleasedUnstored
        }
    }

    /// The tier involved (`hit`, `stored`, `servedAfterError`, `evicted`, `purged`, `storeFailed`).
    public var tier: CacheTier? {
        switch base {
        case .hit(let tier, _), .stored(let tier, _, _), .servedAfterError(let tier, _), .evicted(let tier, _, _),
            .storeFailed(let tier, _), .purged(let tier, _):
            tier
        case .miss, .revalidated, .invalidated, .leaseTaken, .leaseWaited, .leaseWaitTimedOut, .leaseReleasedUnstored:
            nil
        }
    }

    /// The entry's key, without query or credentials (all but `evicted`, `purged` and `storeFailed`).
    public var key: String? {
        switch base {
        case .hit(_, let key), .miss(let key), .stored(_, let key, _), .revalidated(let key, _),
            .servedAfterError(_, let key), .invalidated(let key), .leaseTaken(let key), .leaseWaited(let key),
            .leaseWaitTimedOut(let key), .leaseReleasedUnstored(let key):
            key
        case .evicted, .purged, .storeFailed: nil
        }
    }

    /// Bytes stored (`stored`) or removed (`evicted`).
    public var bytes: Int? {
        switch base {
        case .stored(_, _, let bytes), .evicted(_, _, let bytes): bytes
        default: nil
        }
    }

    /// Entries removed (`evicted`), or removed or marked stale (`purged`).
    public var count: Int? {
        switch base {
        case .evicted(_, let count, _), .purged(_, let count): count
        default: nil
        }
    }

    /// Whether the server answered 304 (`revalidated`).
    public var notModified: Bool? {
        if case .revalidated(_, let notModified) = base { return notModified }
        return nil
    }

    /// Why the store failed (`storeFailed`).
    public var reason: String? {
        if case .storeFailed(_, let reason) = base { return reason }
        return nil
    }

    public var description: String { "\(base)" }
}
