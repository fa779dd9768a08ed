internal import CourierCore
public import FoundationEssentials

extension CookieJar {
    /// One ``CookieJar`` per partition key (a user, a session, a tenant): what a server that
    /// holds one coordinator for many users gives its ``CookieDecorator``, so that no user's
    /// cookies are ever sent with another user's requests.
    ///
    /// ```swift
    /// let jars = CookieJar.Partitioned()
    /// var configuration = RequestCoordinator.Configuration()
    /// configuration.decorators = [CookieDecorator(jars: jars)]
    /// // per incoming request of user `id`:
    /// try await CookieJar.Partitioned.$current.withValue(id) { try await profile.load(using: coordinator) }
    /// ```
    ///
    /// Jars are made on first use and kept until ``removeJar(for:)`` (a user logged out) or
    /// ``removeAll()``: remove them, or the partitions grow with your users. Its
    /// ``description`` counts jars and never shows a key or a cookie.
    public final class Partitioned: Sendable, CustomStringConvertible {
        /// The partition the current task works for, read by a ``CookieDecorator`` made with
        /// ``CookieDecorator/init(jars:partition:)`` and its default closure. `nil` (outside
        /// `withValue`) means no jar: no cookie sent, none stored.
        @TaskLocal public static var current: String?

        private let jars = LockedValue<[String: CookieJar]>([:])
        private let limits: Limits
        private let now: @Sendable () -> Date

        /// Creates an empty set of jars; each new jar gets `limits` and the wall clock `now`.
        public init(limits: Limits = Limits(), now: @escaping @Sendable () -> Date = { Date() }) {
            self.limits = limits
            self.now = now
        }

        /// The jar of partition `key`, made empty on first use.
        public func jar(for key: String) -> CookieJar {
            jars.withLock { jars in
                if let jar = jars[key] { return jar }
                let jar = CookieJar(limits: limits, now: now)
                jars[key] = jar
                return jar
            }
        }

        /// The jar of partition `key` when it has one, without making one.
        package func existingJar(for key: String) -> CookieJar? { jars.withLock { $0[key] } }

        /// Forgets partition `key` and its cookies.
        public func removeJar(for key: String) { _ = jars.withLock { $0.removeValue(forKey: key) } }

        /// Forgets every partition.
        public func removeAll() { jars.withLock { $0 = [:] } }

        /// How many partitions have a jar.
        public var count: Int { jars.withLock { $0.count } }

        public var description: String { "CookieJar.Partitioned(\(count) jars)" }
    }
}
