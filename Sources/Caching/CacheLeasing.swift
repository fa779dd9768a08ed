/// A store shared by several processes that can hand out short leases on keys, so that when an
/// entry is missing from every tier only one process of a fleet fetches it (fleet-wide
/// collapsing); the others wait for the entry it stores.
///
/// A lease expires on its own after its duration, so a holder that dies blocks the others for
/// no longer than that.
public protocol CacheLeasing: CacheStore {
    /// Takes the lease on `key` for `duration` when nobody holds a live one; nil when another
    /// holder does.
    func acquireLease(on key: CacheKey, for duration: Duration) async throws -> CacheLease?
    /// Gives a lease back before it expires (the entry was stored, or the fetch failed).
    /// Releasing a lease that expired or that another holder has since taken does nothing.
    func releaseLease(_ lease: CacheLease) async throws
}

/// A lease taken with ``CacheLeasing/acquireLease(on:for:)``.
public struct CacheLease: Sendable, Hashable {
    /// The key the lease covers.
    public let key: CacheKey
    /// Identifies this holder's lease, so that a release never drops a later holder's.
    public let token: String

    /// A lease on `key` identified by `token` (stores create them).
    public init(key: CacheKey, token: String) {
        self.key = key
        self.token = token
    }
}
