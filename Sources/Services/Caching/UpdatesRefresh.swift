/// When ``Resource/updates(using:refresh:logger:)`` goes to the network after the stored value.
///
/// ```swift
/// // A fresh stored value is all the screen needs: no request until it goes stale.
/// for try await feed in Feed().updates(refresh: .whenStale) { show(feed.value) }
/// ```
public struct UpdatesRefresh: Sendable, Hashable, CustomStringConvertible {
    let skipsFreshValues: Bool

    /// Always: the stored value (when there is one), then the network's. The default.
    public static let always = UpdatesRefresh(skipsFreshValues: false)

    /// Only when the stored value is stale or missing. A value that is fresh under the
    /// resource's ``Resource/cachePolicy`` (younger than `maxAge` under
    /// `CachePolicy.cacheElseNetwork(maxAge:tiers:)`, fresh by RFC 9111 under
    /// `CachePolicy.http(tiers:)`) is yielded and the stream ends with no request.
    /// A value that `stale-while-revalidate` would serve counts as stale: it is yielded, then
    /// the network's follows. Under `CachePolicy.networkOnly` and
    /// `CachePolicy.networkElseCache(tiers:)` nothing stored is ever fresh, so this is ``always``.
    public static let whenStale = UpdatesRefresh(skipsFreshValues: true)

    public var description: String { skipsFreshValues ? "whenStale" : "always" }
}
