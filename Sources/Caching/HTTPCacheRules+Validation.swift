package import FoundationEssentials
package import HTTPTypes

extension HTTPCacheRules {
    /// `If-None-Match` and `If-Modified-Since` for `entry`'s validators.
    package static func conditionalFields(for entry: CachedResponse) -> HTTPFields {
        var fields = HTTPFields()
        if let etag = entry.etag { fields[.ifNoneMatch] = etag }
        if let lastModified = entry.lastModified { fields[.ifModifiedSince] = lastModified }
        return fields
    }

    /// `If-None-Match` with the entity tag of a stored variant the request did not match on
    /// `Vary` (section 4.3.1): a 304 says the server would send that variant to this request
    /// too. Nil when the entry has no entity tag (`Last-Modified` cannot tell variants apart)
    /// or says `Vary: *`.
    package static func variantConditionalFields(for entry: CachedResponse) -> HTTPFields? {
        guard let etag = entry.etag, !varyNames(entry.headerFields).contains("*") else { return nil }
        return [.ifNoneMatch: etag]
    }

    /// `entry` updated by a 304 (section 4.3.4): the 304's fields replace the stored ones of the
    /// same name (except `Content-Length`, `Content-Encoding` and connection fields), the body
    /// stays, the times are those of the revalidation.
    package static func freshened(
        _ entry: CachedResponse, with notModified: HTTPResponse, requestTime: Date, responseTime: Date
    ) -> CachedResponse {
        var updated = entry
        let skipped = connectionFields(of: notModified.headerFields) + [.contentLength, .contentEncoding]
        var replaced: Set<HTTPField.Name> = []
        for field in notModified.headerFields where !skipped.contains(field.name) {
            if replaced.insert(field.name).inserted { updated.headerFields[values: field.name] = [] }
            updated.headerFields.append(field)
        }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        updated.purgedAt = nil  // revalidated: fresh again
        return updated
    }

    /// The stored `GET` response `entry` updated by a 200 to a `HEAD` of the same URI
    /// (section 4.3.5), or nil when they differ and the stored response must not be used
    /// without a new `GET`: an `ETag` or `Last-Modified` of the `HEAD` that the entry does not
    /// share, or a `Content-Length` other than the stored body's (checked when the `HEAD`
    /// names no content coding).
    package static func freshened(
        _ entry: CachedResponse, withHead head: HTTPResponse, requestTime: Date, responseTime: Date
    ) -> CachedResponse? {
        let fields = head.headerFields
        guard head.status.code == 200, entry.status == 200 else { return nil }
        if let etag = fields[.eTag], etag != entry.etag { return nil }
        if let lastModified = fields[.lastModified], lastModified != entry.lastModified { return nil }
        if fields[.contentEncoding] == nil, let length = fields[.contentLength], Int(length) != entry.body.count {
            return nil
        }
        return freshened(entry, with: head, requestTime: requestTime, responseTime: responseTime)
    }

    /// The response a stored `GET` gives to a `HEAD` (section 4.3.5's converse): its head, no body.
    package static func headResponse(from entry: CachedResponse) -> CachedResponse {
        var head = entry
        head.body = Data()
        return head
    }
}
