extension CacheEvent {
    /// Which cache event happened, without its fields: a value to switch on (with a `default`)
    /// or use as a metric label. New names may be added.
    public struct Name: Sendable, Hashable, CustomStringConvertible {
        /// The name, as written in this type's static members.
        public let description: String

        private init(_ description: String) { self.description = description }

        /// A stored response of `tier` answered a load.
        public static let hit = Name("hit")
        /// No tier held the key.
        public static let miss = Name("miss")
        /// A response was stored in `tier` (`bytes`).
        public static let stored = Name("stored")
        /// A conditional request revalidated a stored response; `notModified` when the server said 304.
        public static let revalidated = Name("revalidated")
        /// A stored response of `tier` answered because the network failed (offline fallback, `stale-if-error`).
        public static let servedAfterError = Name("servedAfterError")
        /// `tier` evicted `count` entries (`bytes`) to stay under its limits.
        public static let evicted = Name("evicted")
        /// An entry was removed: an unsafe method succeeded on its URL, or it could not be decoded.
        public static let invalidated = Name("invalidated")
        /// A purge (``TieredCache/purge(url:soft:)``, ``TieredCache/purge(tag:soft:)``) removed
        /// `count` entries of `tier`, or marked them stale when soft.
        public static let purged = Name("purged")
        /// A store of `tier` failed (`reason`); the chain carried on as if it had missed.
        public static let storeFailed = Name("storeFailed")
        /// This process took the fleet-wide lease for the key and fetches it for the fleet.
        public static let leaseTaken = Name("leaseTaken")
        /// Another process held the fleet-wide lease, and the entry it stored answered.
        public static let leaseWaited = Name("leaseWaited")
        /// Another process held the lease and stored nothing in time, so this one fetched itself.
        public static let leaseWaitTimedOut = Name("leaseWaitTimedOut")
        /// Another process gave the lease back with nothing stored and said so (a store that
        /// notifies), so this one fetched at once rather than wait for the lease.
        public static let leaseReleasedUnstored = Name("leaseReleasedUnstored")
    }
}
