extension CacheEvent {
    /// Which cache event happened, without its fields: a value to switch on (with a `default`)
    /// or use as a metric label. New names may be added.
    public struct Name: Sendable, Hashable, CustomStringConvertible {
        /// The name, as written in this type's static members.
        public let description: String

        private init(_ description: String) { self.description = description }

        /// ``CacheEvent/hit(_:key:)``.
        public static let hit = Name("hit")
        /// ``CacheEvent/miss(key:)``.
        public static let miss = Name("miss")
        /// ``CacheEvent/stored(_:key:bytes:)``.
        public static let stored = Name("stored")
        /// ``CacheEvent/revalidated(key:notModified:)``.
        public static let revalidated = Name("revalidated")
        /// ``CacheEvent/servedAfterError(_:key:)``.
        public static let servedAfterError = Name("servedAfterError")
        /// ``CacheEvent/evicted(_:count:bytes:)``.
        public static let evicted = Name("evicted")
        /// ``CacheEvent/invalidated(key:)``.
        public static let invalidated = Name("invalidated")
        /// ``CacheEvent/storeFailed(_:reason:)``.
        public static let storeFailed = Name("storeFailed")
        /// ``CacheEvent/leaseTaken(key:)``.
        public static let leaseTaken = Name("leaseTaken")
        /// ``CacheEvent/leaseWaited(key:)``.
        public static let leaseWaited = Name("leaseWaited")
        /// ``CacheEvent/leaseWaitTimedOut(key:)``.
        public static let leaseWaitTimedOut = Name("leaseWaitTimedOut")
    }
}
