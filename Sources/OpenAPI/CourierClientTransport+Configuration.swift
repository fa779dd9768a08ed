public import CourierServices
public import Foundation
internal import HTTPTypes

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
        /// The largest request body sent, in bytes (default 64 MiB); a larger one fails with
        /// `invalidRequest` and nothing is sent.
        public var maximumRequestBodySize = 64 << 20
        /// The size in bytes past which a request body is spooled to a temporary file instead of
        /// held in memory (default 1 MiB). A body of unknown length is spooled once it grows past
        /// it, so memory holds at most this much plus one chunk. Either way the body replays on
        /// retries and decorator replays.
        public var requestBodySpoolThreshold = 1 << 20
        /// Where request spool files go (default: the temporary directory). Each is created with
        /// mode 0600 and a unique name, and removed when its request ends; a directory that is
        /// missing or not writable fails the request with `fileAccess` before anything is sent.
        public var requestBodySpoolDirectory: URL = FileManager.default.temporaryDirectory

        /// Operations whose responses stream even as coalescable `GET`s (a large JSON export,
        /// say), unless a cache policy names them. Non-`GET` operations and binary downloads
        /// stream without being listed (see ``CourierClientTransport``).
        public var streamedOperations: Set<String> = []

        /// The default configuration: no cache, the coordinator's retries, 64 MiB bodies spooled
        /// to the temporary directory past 1 MiB.
        public init() {}

        /// The policy for `operationID`.
        package func cachePolicy(for operationID: String) -> CachePolicy {
            cachePolicies[operationID] ?? defaultCachePolicy
        }

        /// Whether the response of `request`, sent as `operationID`, streams: only when it is
        /// not cached, and it cannot coalesce (not a `GET` or `HEAD`), accepts a type that is not JSON
        /// or text (a binary download, whose declared errors may still be JSON), or is named in ``streamedOperations``.
        package func streamsResponse(of request: HTTPRequest, operationID: String) -> Bool {
            guard cachePolicy(for: operationID) == .networkOnly else { return false }
            if streamedOperations.contains(operationID) { return true }
            if request.method != .get && request.method != .head { return true }
            let accepted = request.headerFields[values: .accept].flatMap { $0.split(separator: ",") }
                .map { MediaType.essence(of: $0) }
            return accepted.contains { type in
                !(type.isEmpty || type == "*/*" || type.hasPrefix("text/") || type.hasSuffix("json"))
            }
        }
    }
}
