/// A store shared by several processes that also keeps pauses per host: when a host answers
/// one process `429 Too Many Requests` or `503 Service Unavailable` with `Retry-After`, every
/// process of the fleet leaves it alone until then, so that a quota the fleet shares (a
/// third-party API's) is respected by all of it.
///
/// A coordinator whose cache has such a store writes each pause it is given, and reads the
/// fleet's about once a second. Times are durations from now on the store's clock, so the
/// processes' clocks need not agree.
public protocol HostPausing: CacheStore {
    /// Pauses `host` (`scheme://authority`) for `duration` from now, unless a longer pause
    /// is on.
    func pauseHost(_ host: String, for duration: Duration) async throws
    /// The hosts paused now, each with the time its pause has left.
    func hostPauses() async throws -> [String: Duration]
}
