package import FoundationEssentials
package import HTTPTypes

/// The rules of a private HTTP cache (RFC 9111, with RFC 5861's stale extensions): what may be
/// stored, how fresh a stored response is, when it must be revalidated, and how a 304 updates it.
///
/// Facets: freshness and the decision to serve (`+Freshness`), validation, 304s and `HEAD`
/// (`+Validation`), byte ranges (`+Range`) and invalidation (`+Invalidation`).
package enum HTTPCacheRules {
    /// Statuses cacheable by heuristic freshness (RFC 9110, section 15.1).
    package static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The longest heuristic freshness given (10% of the time since `Last-Modified`, at most this).
    package static let heuristicLimit: TimeInterval = 86_400
    /// Fields that describe one connection, never stored (besides those `Connection` names).
    static let hopByHop: [HTTPField.Name] = [
        .connection, .transferEncoding, .upgrade, .te, HTTPField.Name("Proxy-Connection")!,
        HTTPField.Name("Keep-Alive")!,
        HTTPField.Name("Trailer")!,
    ]

    /// Whether the response says it may be stored at all, whatever the policy: a `GET`, a final
    /// status other than 206 (a part) and 304 (an answer to a condition, not the resource), no
    /// `no-store` on either side (the response's is ignored with `ignoringResponseNoStore`, for
    /// `must-understand`), and no `Vary: *`.
    package static func mayStore(
        request: HTTPRequest, response: HTTPResponse, ignoringResponseNoStore: Bool = false
    ) -> Bool {
        let status = response.status.code
        guard request.method == .get, status >= 200, status != 206, status != 304 else { return false }
        if CacheControl(request.headerFields).noStore { return false }
        if !ignoringResponseNoStore, CacheControl(response.headerFields).noStore { return false }
        return !varyNames(response.headerFields).contains("*")
    }

    /// The final statuses whose caching rules this cache implements: those RFC 9110 defines,
    /// but for 305 (deprecated) and 416 (an answer to a `Range`, which the cache key does not
    /// hold). Under `.http()`, a response with `must-understand` is stored only with one of
    /// them, and then its `no-store` is ignored (RFC 9111, section 5.2.2.3).
    package static let understoodStatuses: Set<Int> = Set(200...205).union(300...304).union(307...308)
        .union(400...415).union([417, 421, 422, 426]).union(500...505)

    /// Whether a private cache following HTTP stores it (section 3):
    /// ``mayStore(request:response:ignoringResponseNoStore:)`` (with `must-understand`, see
    /// ``understoodStatuses``) plus explicit freshness, a validator, `public`/`private`, or a heuristically cacheable
    /// status. A 206 is stored as a part of its representation (section 3.3) when it has one
    /// strong `ETag` and one `Content-Range` with a known length (``storedPart(_:)``).
    package static func isStorable(request: HTTPRequest, response: HTTPResponse) -> Bool {
        var response = response
        if response.status == .partialContent {
            let ranges = response.headerFields[values: .contentRange]
            guard strongETag(response.headerFields) != nil, ranges.count == 1, contentRange(ranges[0]) != nil else {
                return false
            }
            response.status = .ok
        }
        let fields = response.headerFields
        let control = CacheControl(fields)
        if control.mustUnderstand, !understoodStatuses.contains(response.status.code) { return false }
        guard mayStore(request: request, response: response, ignoringResponseNoStore: control.mustUnderstand) else {
            return false
        }
        return control.maxAge != nil || fields[.expires] != nil || control.contains("public")
            || control.contains("private") || fields[.eTag] != nil || fields[.lastModified] != nil
            || heuristicallyCacheable.contains(response.status.code)
    }

    /// Whether a shared cache (a tier a fleet shares) may also keep a response a private cache
    /// keeps: never one marked `private` (section 5.2.2.7), and one to a request with
    /// `Authorization` only when it says `public`, `s-maxage` or `must-revalidate` (section 3.5).
    package static func sharedMayStore(request: HTTPRequest, responseFields fields: HTTPFields) -> Bool {
        let control = CacheControl(fields)
        if control.contains("private") { return false }
        guard request.headerFields[.authorization] != nil else { return true }
        return control.contains("public") || control.contains("s-maxage") || control.mustRevalidate
    }

    /// The fields of `response` worth storing: without the hop-by-hop fields and the fields
    /// its `Connection` names (section 3.1). One exception: a transfer coding other than chunked,
    /// which Courier hands on undone, stays in `Transfer-Encoding` (chunked removed), so that a
    /// stored body says what the network's did: that it is still in that coding.
    package static func storedFields(of response: HTTPResponse) -> HTTPFields {
        var fields = response.headerFields
        for name in connectionFields(of: response.headerFields) { fields[values: name] = [] }
        let transferCodings = Codings.listed(
            in: response.headerFields, .transferEncoding, ignoring: ["chunked", "identity"])
        if !transferCodings.isEmpty { fields[.transferEncoding] = transferCodings.joined(separator: ", ") }
        return fields
    }

    /// The hop-by-hop fields and those `fields`' `Connection` names.
    static func connectionFields(of fields: HTTPFields) -> [HTTPField.Name] {
        let named = fields[values: .connection].flatMap { $0.split(separator: ",") }
            .compactMap { HTTPField.Name(String($0).trimmedSpaces) }
        return hopByHop + named
    }

    /// Whether the request carries conditions of its own (`If-None-Match`, `If-Modified-Since`,
    /// `If-Match`, `If-Unmodified-Since`, `If-Range`): the caller wants the server's answer to
    /// them, so the cache neither answers nor adds its own validators, and a 304 is not stored.
    package static func isConditional(_ request: HTTPRequest) -> Bool {
        let names: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange]
        return names.contains { request.headerFields[$0] != nil }
    }

    /// The digest of `request`'s values for the fields `responseFields` names in `Vary`, or nil
    /// when there is no `Vary`. Values are hashed, so stored entries never hold credentials.
    package static func variant(of request: HTTPRequest, responseFields: HTTPFields) -> String? {
        let names = varyNames(responseFields).sorted()
        guard !names.isEmpty else { return nil }
        var hash = SHA256()
        for name in names {
            hash.update(field: name)
            let values = HTTPField.Name(name).map { request.headerFields[values: $0] } ?? []
            hash.update(field: values.map { $0.trimmedSpaces }.joined(separator: ","))
        }
        return SHA256.hex(hash.finalize())
    }

    /// Whether `entry` was stored for a request that matches `request` on every `Vary`ed field
    /// (`Vary: *` never matches).
    package static func matchesVariant(_ entry: CachedResponse, request: HTTPRequest) -> Bool {
        if varyNames(entry.headerFields).contains("*") { return false }
        return variant(of: request, responseFields: entry.headerFields) == entry.variant
    }

    static func varyNames(_ fields: HTTPFields) -> [String] {
        fields[values: .vary].flatMap { $0.split(separator: ",") }.map { String($0).trimmedSpaces.lowercased() }
            .filter { !$0.isEmpty }
    }
}
