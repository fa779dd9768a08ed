package import FoundationEssentials
package import HTTPTypes

extension HTTPCacheRules {
    /// How old and how long-lived a stored response is, in seconds.
    package struct Freshness: Sendable, Hashable {
        /// The freshness lifetime (section 4.2.1).
        package var lifetime: TimeInterval
        /// The current age (section 4.2.3).
        package var age: TimeInterval
        /// Whether the response is still fresh.
        package var isFresh: Bool { age < lifetime }
        /// Seconds past its lifetime (negative while fresh).
        package var staleness: TimeInterval { age - lifetime }
    }

    /// The freshness of `entry` at `now`, in a private cache or, when `shared`, in a shared one.
    /// A soft purge ends the lifetime at the age the entry had when it was purged.
    package static func freshness(of entry: CachedResponse, now: Date, shared: Bool = false) -> Freshness {
        var lifetime = freshnessLifetime(of: entry, shared: shared)
        if let purged = entry.effectivePurge { lifetime = min(lifetime, currentAge(of: entry, now: purged)) }
        return Freshness(lifetime: lifetime, age: currentAge(of: entry, now: now))
    }

    /// `max-age`, else `Expires` minus `Date`, else the heuristic. Of two `max-age`s the first
    /// counts (section 4.2.1 allows the first or stale; browsers take the first). An invalid
    /// `max-age` (a decimal, a sign, a letter, spaces around `=`), an invalid `Expires` (such
    /// as `0`, or a date in none of the three HTTP forms), or two `Expires` lines that disagree
    /// mean already expired (sections 4.2.1 and 5.3). A `shared` cache takes `s-maxage` first,
    /// read by the same rules (section 5.2.2.10).
    package static func freshnessLifetime(of entry: CachedResponse, shared: Bool = false) -> TimeInterval {
        let fields = entry.headerFields
        let control = CacheControl(fields)
        if shared, let sharedMaxAge = control.seconds("s-maxage") { return TimeInterval(sharedMaxAge.value ?? 0) }
        if let maxAge = control.maxAge { return TimeInterval(maxAge.value ?? 0) }
        let date = dateValue(of: entry)
        let expiresLines = fields[values: .expires]
        if let expires = expiresLines.first {
            guard Set(expiresLines).count == 1, let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        if heuristicallyCacheable.contains(entry.status.code), let text = fields[.lastModified],
            let lastModified = HTTPDate.parse(text)
        {
            return min(heuristicLimit, max(0, date.timeIntervalSince(lastModified) / 10))
        }
        return 0
    }

    /// The age the RFC's formula gives: the corrected initial age (from `Age`, `Date` and the
    /// request's round trip) plus the time since the response arrived.
    package static func currentAge(of entry: CachedResponse, now: Date) -> TimeInterval {
        let ageValue = ageValue(of: entry.headerFields) ?? 0
        let apparentAge = max(0, entry.responseTime.timeIntervalSince(dateValue(of: entry)))
        let responseDelay = max(0, entry.responseTime.timeIntervalSince(entry.requestTime))
        let correctedInitialAge = max(apparentAge, TimeInterval(ageValue) + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(entry.responseTime))
    }

    /// The `Age` of `fields` (section 5.1): of a list (`7200, 0`, or several `Age` lines) the
    /// first member counts, without parameters (`7200;foo=bar` is 7200, as browsers read it:
    /// ignoring the whole field would take a stale response for a fresh one); nil when absent or
    /// when that member is not a non-negative integer (`-3`, `1.5`, `60s`), which a cache ignores.
    package static func ageValue(of fields: HTTPFields) -> Int? {
        guard let line = fields[values: .age].first else { return nil }
        let first = line.prefix { $0 != "," }
        return CacheControl.delta(String(first.prefix { $0 != ";" }))
    }

    /// How long an entry without validators is kept once stale, beyond its `stale-while-revalidate`
    /// and `stale-if-error` windows: a day, for a request's `max-stale` to accept it and a `HEAD`
    /// to freshen it (section 4.3.5). An entry with validators is kept until its store evicts it.
    package static let staleRetention: TimeInterval = 86_400

    /// When a store may drop `entry` (its `expiresAt` under `CachePolicy.http`): nil for an
    /// entry with validators (a conditional request can always bring it back to use); else the
    /// end of its freshness plus its stale windows or ``staleRetention``, the longer.
    package static func retainedUntil(_ entry: CachedResponse) -> Date? {
        guard !entry.hasValidators else { return nil }
        let control = CacheControl(entry.headerFields)
        let freshness = freshness(of: entry, now: entry.responseTime)
        let window = max(control.staleWhileRevalidate ?? 0, control.staleIfError ?? 0)
        return entry.responseTime + max(0, -freshness.staleness) + max(TimeInterval(window), staleRetention)
    }

    /// What a cache following HTTP does with a stored response for a new request.
    package enum Decision: Sendable, Hashable {
        /// Serve it: it is fresh, or stale within what the request's `max-stale` accepts.
        case fresh
        /// Serve it now and revalidate in the background (`stale-while-revalidate`).
        case staleWhileRevalidate
        /// Send a conditional request with its validators.
        case revalidate
        /// It cannot be used: send a plain request.
        case unusable
    }

    /// Decides how `entry` may answer `request` at `now`, with the request's own directives
    /// (section 5.2.1): `no-cache` and `max-age=0` revalidate; `max-age=N` refuses an entry
    /// older than N seconds; `min-fresh=N` one fresh for less than N more; `max-stale[=N]`
    /// accepts one stale by at most N seconds (any, without N) unless the response says
    /// `must-revalidate` or `no-cache`. `stale-while-revalidate` applies only to requests
    /// without `max-age` and `min-fresh`.
    ///
    /// A `shared` cache reads the entry by its rules: `s-maxage` first, and `proxy-revalidate`
    /// (or `s-maxage`) as `must-revalidate`.
    package static func decide(
        _ entry: CachedResponse, for request: HTTPRequest, now: Date, shared: Bool = false
    ) -> Decision {
        let control = CacheControl(entry.headerFields)
        let requestControl = CacheControl(request.headerFields)
        let freshness = freshness(of: entry, now: now, shared: shared)
        let mustRevalidate = control.mustRevalidate(shared: shared)
        let requestMaxAge = requestControl.maxAge
        let mustValidate =
            control.requiresRevalidation || requestControl.noCache || requestMaxAge == .invalid
            || requestMaxAge?.value == 0
        if !mustValidate && satisfies(requestControl, mustRevalidate: mustRevalidate, freshness: freshness) {
            return .fresh
        }
        if !mustValidate, !mustRevalidate, requestMaxAge == nil, requestControl.seconds("min-fresh") == nil,
            let window = control.staleWhileRevalidate, freshness.staleness <= TimeInterval(window)
        {
            return .staleWhileRevalidate
        }
        return entry.hasValidators ? .revalidate : .unusable
    }

    /// Whether a response with `freshness` meets the request's `max-age`, `min-fresh` and
    /// `max-stale`.
    private static func satisfies(_ request: CacheControl, mustRevalidate: Bool, freshness: Freshness) -> Bool {
        if let maxAge = request.maxAge?.value, freshness.age > TimeInterval(maxAge) { return false }
        if let minFresh = request.seconds("min-fresh") {
            guard let seconds = minFresh.value, -freshness.staleness >= TimeInterval(seconds) else { return false }
        }
        if freshness.isFresh { return true }
        guard case .some(let limit) = request.directives["max-stale"], !mustRevalidate else { return false }
        guard limit != nil else { return true }  // `max-stale` alone: any staleness
        guard let seconds = request.seconds("max-stale")?.value else { return false }
        return freshness.staleness <= TimeInterval(seconds)
    }

    /// Whether `entry` may stand in for a failed request: fresh, or stale by no more than its
    /// `stale-if-error` window or the cache's own `allowance` (a disconnected cache's, RFC 9111
    /// section 4.2.4), whichever is longer, and neither `must-revalidate` nor an unqualified
    /// `no-cache` (nor, when `shared`, `proxy-revalidate` or `s-maxage`).
    package static func mayServeOnError(
        _ entry: CachedResponse, now: Date, shared: Bool = false, allowance: TimeInterval? = nil
    ) -> Bool {
        let control = CacheControl(entry.headerFields)
        guard !control.mustRevalidate(shared: shared), !control.requiresRevalidation else { return false }
        let freshness = freshness(of: entry, now: now, shared: shared)
        if freshness.isFresh { return true }
        guard let window = [control.staleIfError.map(TimeInterval.init), allowance].compactMap({ $0 }).max() else {
            return false
        }
        return freshness.staleness <= window
    }

    /// What a disconnected cache's `allowance` of staleness becomes for `request`: none when it
    /// asks for a fresh or revalidated answer (`no-cache`, `max-age`, `min-fresh`), at most its
    /// `max-stale=N`.
    package static func staleAllowance(_ allowance: TimeInterval, for request: HTTPRequest) -> TimeInterval? {
        let control = CacheControl(request.headerFields)
        if control.noCache || control.maxAge != nil || control.seconds("min-fresh") != nil { return nil }
        guard let limit = control.seconds("max-stale")?.value else { return allowance }
        return min(allowance, TimeInterval(limit))
    }

    /// `entry` as it may be sent without revalidation: without the fields a qualified `no-cache`
    /// names (`no-cache="Set-Cookie"`, section 5.2.2.4); after a successful revalidation the
    /// stored fields are all sent.
    package static func unvalidated(_ entry: CachedResponse) -> CachedResponse {
        let names = CacheControl(entry.headerFields).noCacheFields
        guard !names.isEmpty else { return entry }
        var served = entry
        for name in names.compactMap({ HTTPField.Name($0) }) { served.headerFields[values: name] = [] }
        return served
    }

    /// Statuses that count as errors for `stale-if-error` (RFC 5861, section 4).
    package static func isServerError(_ status: Int) -> Bool { [500, 502, 503, 504].contains(status) }

    static func dateValue(of entry: CachedResponse) -> Date {
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
