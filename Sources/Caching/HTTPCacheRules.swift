public import FoundationEssentials
public import HTTPTypes

/// The rules of a private HTTP cache (RFC 9111, with RFC 5861's stale extensions): what may be
/// stored, how fresh a stored response is, when it must be revalidated, and how a 304 updates it.
public enum HTTPCacheRules {
    /// Statuses cacheable by heuristic freshness (RFC 9110, section 15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The longest heuristic freshness given (10% of the time since `Last-Modified`, at most this).
    public static let heuristicLimit: TimeInterval = 86_400
    /// Fields that describe one connection, never stored.
    static let hopByHop: [HTTPField.Name] = [
        .connection, .transferEncoding, .upgrade, .te, HTTPField.Name("Proxy-Connection")!, HTTPField.Name("Keep-Alive")!,
        HTTPField.Name("Trailer")!,
    ]

    /// Whether the response says it may be stored at all, whatever the policy: a `GET`, a final
    /// status other than 206, no `no-store` on either side, and no `Vary: *`.
    public static func mayStore(request: HTTPRequest, response: HTTPResponse) -> Bool {
        guard request.method == .get, response.status.code >= 200, response.status.code != 206 else { return false }
        if CacheControl(request.headerFields).noStore || CacheControl(response.headerFields).noStore { return false }
        return !varyNames(response.headerFields).contains("*")
    }

    /// Whether a private cache following HTTP stores it (section 3): ``mayStore(request:response:)``
    /// plus explicit freshness, a validator, `public`/`private`, or a heuristically cacheable status.
    public static func isStorable(request: HTTPRequest, response: HTTPResponse) -> Bool {
        guard mayStore(request: request, response: response) else { return false }
        let fields = response.headerFields
        let control = CacheControl(fields)
        return control.maxAge != nil || fields[.expires] != nil || control.contains("public")
            || control.contains("private") || fields[.eTag] != nil || fields[.lastModified] != nil
            || heuristicallyCacheable.contains(response.status.code)
    }

    /// How old and how long-lived a stored response is, in seconds.
    public struct Freshness: Sendable, Hashable {
        /// The freshness lifetime (section 4.2.1).
        public var lifetime: TimeInterval
        /// The current age (section 4.2.3).
        public var age: TimeInterval
        /// Whether the response is still fresh.
        public var isFresh: Bool { age < lifetime }
        /// Seconds past its lifetime (negative while fresh).
        public var staleness: TimeInterval { age - lifetime }
    }

    /// The freshness of `entry` at `now`.
    public static func freshness(of entry: CachedResponse, now: Date) -> Freshness {
        Freshness(lifetime: freshnessLifetime(of: entry), age: currentAge(of: entry, now: now))
    }

    /// `max-age`, else `Expires` minus `Date`, else the heuristic; an invalid `max-age` or
    /// `Expires` (such as `0`) means already expired.
    public static func freshnessLifetime(of entry: CachedResponse) -> TimeInterval {
        let fields = entry.headerFields
        if let maxAge = CacheControl(fields).maxAge { return TimeInterval(maxAge.value ?? 0) }
        let date = dateValue(of: entry)
        if let expires = fields[.expires] {
            guard let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        if heuristicallyCacheable.contains(entry.status), let text = fields[.lastModified],
            let lastModified = HTTPDate.parse(text)
        {
            return min(heuristicLimit, max(0, date.timeIntervalSince(lastModified) / 10))
        }
        return 0
    }

    /// The age the RFC's formula gives: the corrected initial age (from `Age`, `Date` and the
    /// request's round trip) plus the time since the response arrived.
    public static func currentAge(of entry: CachedResponse, now: Date) -> TimeInterval {
        let ageValue = entry.headerFields[.age].flatMap { CacheControl.delta($0) } ?? 0
        let apparentAge = max(0, entry.responseTime.timeIntervalSince(dateValue(of: entry)))
        let responseDelay = max(0, entry.responseTime.timeIntervalSince(entry.requestTime))
        let correctedInitialAge = max(apparentAge, TimeInterval(ageValue) + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(entry.responseTime))
    }

    /// What a cache following HTTP does with a stored response for a new request.
    public enum Decision: Sendable, Hashable {
        /// Serve it: it is fresh.
        case fresh
        /// Serve it now and revalidate in the background (`stale-while-revalidate`).
        case staleWhileRevalidate
        /// Send a conditional request with its validators.
        case revalidate
        /// It cannot be used: send a plain request.
        case unusable
    }

    /// Decides how `entry` may answer `request` at `now`.
    public static func decide(_ entry: CachedResponse, for request: HTTPRequest, now: Date) -> Decision {
        let control = CacheControl(entry.headerFields)
        let requestControl = CacheControl(request.headerFields)
        let freshness = freshness(of: entry, now: now)
        let mustValidate = control.noCache || requestControl.noCache || requestControl.maxAge?.value == 0
        if !mustValidate && freshness.isFresh { return .fresh }
        if !mustValidate, !control.mustRevalidate, let window = control.staleWhileRevalidate,
            freshness.staleness <= TimeInterval(window)
        {
            return .staleWhileRevalidate
        }
        return entry.hasValidators ? .revalidate : .unusable
    }

    /// Whether `entry` may stand in for a failed request (`stale-if-error`): fresh, or stale by
    /// no more than the window, and neither `must-revalidate` nor `no-cache`.
    public static func mayServeOnError(_ entry: CachedResponse, now: Date) -> Bool {
        let control = CacheControl(entry.headerFields)
        guard !control.mustRevalidate, !control.noCache else { return false }
        let freshness = freshness(of: entry, now: now)
        if freshness.isFresh { return true }
        guard let window = control.staleIfError else { return false }
        return freshness.staleness <= TimeInterval(window)
    }

    /// Statuses that count as errors for `stale-if-error` (RFC 5861, section 4).
    public static func isServerError(_ status: Int) -> Bool { [500, 502, 503, 504].contains(status) }

    /// `If-None-Match` and `If-Modified-Since` for `entry`'s validators.
    public static func conditionalFields(for entry: CachedResponse) -> HTTPFields {
        var fields = HTTPFields()
        if let etag = entry.etag { fields[.ifNoneMatch] = etag }
        if let lastModified = entry.lastModified { fields[.ifModifiedSince] = lastModified }
        return fields
    }

    /// `entry` updated by a 304 (section 4.3.4): the 304's fields replace the stored ones of the
    /// same name (except `Content-Length` and connection fields), the body stays, the times are
    /// those of the revalidation.
    public static func freshened(
        _ entry: CachedResponse, with notModified: HTTPResponse, requestTime: Date, responseTime: Date
    ) -> CachedResponse {
        var updated = entry
        let skipped = hopByHop + [.contentLength, .contentEncoding]
        var replaced: Set<HTTPField.Name> = []
        for field in notModified.headerFields where !skipped.contains(field.name) {
            if replaced.insert(field.name).inserted { updated.headerFields[values: field.name] = [] }
            updated.headerFields.append(field)
        }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }

    /// The fields of `response` worth storing (connection fields removed).
    public static func storedFields(of response: HTTPResponse) -> HTTPFields {
        var fields = response.headerFields
        for name in hopByHop { fields[values: name] = [] }
        return fields
    }

    /// The digest of `request`'s values for the fields `responseFields` names in `Vary`, or nil
    /// when there is no `Vary`. Values are hashed, so stored entries never hold credentials.
    public static func variant(of request: HTTPRequest, responseFields: HTTPFields) -> String? {
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
    public static func matchesVariant(_ entry: CachedResponse, request: HTTPRequest) -> Bool {
        if varyNames(entry.headerFields).contains("*") { return false }
        return variant(of: request, responseFields: entry.headerFields) == entry.variant
    }

    /// Whether a response to `method` with `status` invalidates stored responses for its URL
    /// (section 4.4): an unsafe method that did not fail.
    public static func invalidates(method: HTTPRequest.Method, status: Int) -> Bool {
        let safe: [HTTPRequest.Method] = [.get, .head, .options, .trace]
        return !safe.contains(method) && (200..<400).contains(status)
    }

    static func varyNames(_ fields: HTTPFields) -> [String] {
        fields[values: .vary].flatMap { $0.split(separator: ",") }.map { String($0).trimmedSpaces.lowercased() }
            .filter { !$0.isEmpty }
    }

    private static func dateValue(of entry: CachedResponse) -> Date {
        entry.headerFields[.date].flatMap { HTTPDate.parse($0) } ?? entry.responseTime
    }
}

extension CacheControl {
    /// A lone `delta-seconds` value (such as `Age`), or nil when invalid.
    static func delta(_ text: String) -> Int? {
        let text = text.trimmedSpaces
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text).map { min($0, 2_147_483_648) } ?? 2_147_483_648
    }
}
