public import FoundationEssentials
public import HTTPTypes

/// A stored response: status, header fields and body, with the times HTTP freshness needs.
public struct CachedResponse: Sendable, Equatable {
    /// The status (stores keep its code; the reason phrase is the standard one when read back).
    public var status: HTTPResponse.Status
    /// The response's header fields, without those that only described the wire
    /// (`Content-Encoding` of a body Courier inflated, `Content-Length`, `Transfer-Encoding`,
    /// hop-by-hop fields and those the response's `Connection` named).
    public var headerFields: HTTPFields
    /// The body, as delivered to the caller.
    public var body: Data
    /// When the request that produced the response was sent.
    public var requestTime: Date
    /// When the response arrived (or was last confirmed by a 304).
    public var responseTime: Date
    /// After this instant a store may drop the entry (nil: only when evicted).
    public var expiresAt: Date?
    /// Digest of the request header values named by the response's `Vary` (nil when it has none).
    public var variant: String?
    /// When a soft purge marked the entry stale (nil: never): its freshness lifetime ends there
    /// (`HTTPCacheRules.freshness(of:now:shared:)`), so it is served only as a stale response
    /// may be (`stale-while-revalidate`, `stale-if-error`) until a revalidation or a new
    /// response replaces it.
    package var purgedAt: Date?

    /// Creates an entry.
    public init(
        status: HTTPResponse.Status, headerFields: HTTPFields, body: Data, requestTime: Date, responseTime: Date,
        expiresAt: Date? = nil, variant: String? = nil
    ) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.expiresAt = expiresAt
        self.variant = variant
    }

    /// The entity tag, when the response had one.
    package var etag: String? { headerFields[.eTag] }
    /// `Last-Modified`, as sent.
    package var lastModified: String? { headerFields[.lastModified] }
    /// Whether a conditional request can revalidate this entry.
    package var hasValidators: Bool { etag != nil || lastModified != nil }

    /// Bytes the entry occupies, roughly: body plus header text.
    package var cost: Int {
        body.count + headerFields.reduce(64) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
    }

    /// The head to hand to a decoder.
    package var head: HTTPResponse { HTTPResponse(status: status, headerFields: headerFields) }
}
