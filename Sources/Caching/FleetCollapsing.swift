/// How a policy collapses identical loads across the processes of a fleet.
///
/// It applies to a plain `GET` loaded under ``CachePolicy/http(tiers:)`` or
/// ``CachePolicy/cacheElseNetwork(maxAge:tiers:)`` that misses every tier, when the cache's chain
/// has a store conforming to ``CacheLeasing`` in a tier the policy names. Within one process the
/// coordinator's coalescing stays in front: one load per key asks for the lease, the others
/// share its outcome. Then:
///
/// - the process that takes the lease (for ``lease``) fetches, stores, and gives the lease back
///   (also when the fetch fails or is cancelled);
/// - the others wait for the entry, for at most ``wait``: an entry that appears is served
///   through the cache's usual rules; a lease that falls free (its holder failed, or died and
///   the lease expired) is taken by one of them; after ``wait`` they fetch themselves. A store
///   that notifies releases (`PostgresCacheStore` does, through `LISTEN`/`NOTIFY`) wakes them
///   when the holder gives the lease back: they serve its entry at once; when its answer
///   could not be stored, they all go to the origin at once; when it got no answer, one
///   takes the lease at once. They still poll, every 250 ms to 1 s, for what no notification
///   reports. A store that does not notify is polled, backing off from 5 ms to at most 250 ms
///   (on the coordinator's clock).
///
/// A store error while leasing never fails a load: it becomes a `storeFailed` event and the load
/// fetches itself.
public struct FleetCollapsing: Sendable, Hashable {
    /// The longest a load waits for another process's entry before fetching itself.
    public var wait: Duration
    /// How long a lease lasts when its holder never gives it back (it died).
    public var lease: Duration

    /// Waits up to `wait` for another process's entry; leases last `lease`.
    public init(wait: Duration = .seconds(5), lease: Duration = .seconds(10)) {
        self.wait = wait
        self.lease = lease
    }

    /// The first pause between two polls of the leasing store.
    package static let firstPoll: Duration = .milliseconds(5)
    /// The longest pause between two polls.
    package static let longestPoll: Duration = .milliseconds(250)
    /// The first pause between two polls when the store notifies releases (the polls only
    /// catch what no notification reports: a holder that died, a notification lost).
    package static let firstNotifiedPoll: Duration = .milliseconds(250)
    /// The longest pause between two polls when the store notifies releases.
    package static let longestNotifiedPoll: Duration = .seconds(1)
}
