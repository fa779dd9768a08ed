public import CourierServices

extension CourierClientTransport {
    /// What a ``CourierClientTransport`` does per operation, keyed by operation ID.
    public struct Configuration: Sendable {
        /// Cache policies by operation ID, e.g. `["getItem": .cacheElseNetwork(maxAge: .seconds(60))]`.
        /// Operations not listed use ``defaultCachePolicy``.
        public var cachePolicies: [String: CachePolicy] = [:]
        /// The cache policy of operations not in ``cachePolicies`` (default
        /// `CachePolicy.networkOnly`: no operation is cached unless named).
        public var defaultCachePolicy: CachePolicy = .networkOnly
        /// Retry policies by operation ID; operations not listed use the coordinator's.
        public var retryPolicies: [String: RetryPolicy] = [:]
        /// The largest request body sent, in bytes (default 64 MiB). Bodies are collected in
        /// memory before they are sent; a larger one fails with `invalidRequest`.
        public var maximumRequestBodySize = 64 << 20

        /// The default configuration: no cache, the coordinator's retries, 64 MiB bodies.
        public init() {}

        /// The policy for `operationID`.
        public func cachePolicy(for operationID: String) -> CachePolicy {
            cachePolicies[operationID] ?? defaultCachePolicy
        }
    }
}
