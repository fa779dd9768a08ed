internal import CourierCore
internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

/// Builds the final response head from the header lines curl hands over, and rejects what
/// curl lets through: bare CR or NUL in a line, obsolete line folding, conflicting
/// `Content-Length` values, more than one `Location`, a transfer coding after chunked, and
/// blocks over a size limit.
///
/// Interim 1xx heads are skipped. Lines after the final head are the trailer section, which
/// ``ResponseTrailers`` reads under the same rules.
///
/// Every response goes through here, so each line is read with pointers: `memchr` for NUL, CR
/// and the colon, and a table of the names most responses carry (compared with `memcmp`, which
/// also tells `Content-Length` and `Location` apart without comparing strings).
///
/// Not copyable: a copy made in mid-parse would share its place in ``RecentFields`` with the
/// original, and the two could record each other's fields as the last head's.
struct ResponseHeadParser: ~Copyable {
    let limit: Int
    private(set) var status: Int?
    private(set) var reason = ""
    private(set) var fields = HTTPFields()
    private(set) var isComplete = false
    private(set) var contentLength: Int64?
    /// Whether the final head has a `Content-Encoding` field (so that a response without one
    /// skips looking for it, a scan of every field).
    private(set) var hasContentEncoding = false
    private var blockBytes = 0
    private var locationCount = 0
    /// Whether a `Transfer-Encoding` element so far was chunked (which must be the last).
    private var chunkedSeen = false
    /// Whether the head has a `Location` field.
    var hasLocation: Bool { locationCount > 0 }
    /// The recent fields of the thread that parsed the first field, and the number of the
    /// head this parser builds there (see ``RecentFields/beginHead()``).
    private var recent: LoopBound<RecentFields>?
    private var headGeneration = 0
    /// That thread. A parser that finds itself on another one leaves its recent fields alone
    /// from then on (``usesRecentFields`` is false), in every build: they have no lock.
    private var owner: pthread_t?
    private var isDetached = false
    /// Fields of the final head so far (`fields` may hold more: it starts as the last head's).
    private var fieldCount = 0

    /// - Parameter expectedFields: how many fields the head probably has, to size the storage
    ///   once (a hint: more or fewer are fine).
    init(limit: Int, expectedFields: Int = 0) {
        self.limit = limit
        self.expectedFields = expectedFields
    }

    /// The size hint, used when there is no last head to build on.
    private let expectedFields: Int

    /// The head, once complete.
    var response: HTTPResponse? {
        guard isComplete, let status else { return nil }
        return HTTPResponse(status: .init(code: status, reasonPhrase: reason), headerFields: fields)
    }

    /// Consumes one raw line (with its line ending). Returns `true` when it completed the
    /// final head.
    mutating func consume(_ raw: UnsafeRawBufferPointer) throws(ServiceError) -> Bool {
        if isComplete { return false }
        blockBytes += raw.count
        if blockBytes > limit {
            throw ServiceError(.headersTooLarge, "The response headers exceed the limit of \(limit) bytes.")
        }
        var count = raw.count
        guard count > 0, let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return try blockEnded()
        }
        if base[count - 1] == UInt8(ascii: "\n") { count -= 1 }
        if count > 0, base[count - 1] == UInt8(ascii: "\r") { count -= 1 }
        if count == 0 { return try blockEnded() }
        if memchr(base, 0, count) != nil { throw malformed("A response header line contains a NUL byte.") }
        if memchr(base, 0x0D, count) != nil { throw malformed("A response header line contains a bare CR.") }
        let line = UnsafeBufferPointer(start: base, count: count)
        if status == nil { return try parseStatusLine(line) }
        if base[0] == UInt8(ascii: " ") || base[0] == UInt8(ascii: "\t") {
            throw malformed("The response uses obsolete header line folding.")
        }
        guard let colonAddress = memchr(base, Int32(UInt8(ascii: ":")), count) else {
            throw malformed("A response header line has no valid field name.")
        }
        let colon = UnsafeRawPointer(colonAddress).assumingMemoryBound(to: UInt8.self) - base
        let nameBytes = UnsafeBufferPointer(start: base, count: colon)
        let spelled: SpelledName
        if let common = Self.commonSpelling(nameBytes) {
            spelled = .common(common)
        } else if let parsed = HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) {
            spelled = .other(parsed)
        } else {
            throw malformed("A response header line has no valid field name.")
        }
        let role = spelled.role
        let slot = spelled.slot
        var start = colon + 1
        var end = count
        while start < end, base[start] == 0x20 || base[start] == 0x09 { start += 1 }
        while end > start, base[end - 1] == 0x20 || base[end - 1] == 0x09 { end -= 1 }
        let value = UnsafeRawBufferPointer(start: base + start, count: end - start)

        guard fieldCount < FieldLimits.maximumCount else {
            throw ServiceError(
                .headersTooLarge, "The response has more than \(FieldLimits.maximumCount) header fields.")
        }
        switch role {
        case .contentLength: try checkContentLength(value)
        case .location:
            locationCount += 1
            if locationCount > 1 { throw malformed("The response has more than one Location header.") }
        case .contentEncoding: hasContentEncoding = true
        case .transferEncoding: try checkTransferEncoding(value)
        case .setCookie, .other: break
        }
        let index = fieldCount
        fieldCount += 1
        guard let recent = recentFields() else {
            let field = Self.field(spelled.name, value: value)
            if index < fields.count {
                fields.replaceSubrange(index..<index + 1, with: CollectionOfOne(field))
            } else {
                fields.append(field)
            }
            return false
        }
        // The same field at the same place as in the last head: already in `fields`.
        if let slot, recent.value.lastHead(headGeneration, matches: slot, value: value, at: index) { return false }
        let field: HTTPField
        if let slot {
            if let known = recent.value.field(slot: slot, value: value) {
                field = known
            } else {
                field = Self.field(spelled.name, value: value)
                recent.value.remember(field, slot: slot, value: value)
            }
        } else {
            field = Self.field(spelled.name, value: value)
        }
        // Only a head of common fields that carry no secret is kept (a custom field may hold a
        // token; a `Location`, a code).
        recent.value.stage(headGeneration, index: index, slot: slot, value: value, keepsHead: slot != nil)
        if index < fields.count {
            // Not `fields[index] = field`: its setter keeps the old field when the two compare
            // equal, and names compare ignoring case, so a name's spelling would be lost.
            fields.replaceSubrange(index..<index + 1, with: CollectionOfOne(field))
        } else {
            fields.append(field)
        }
        return false
    }

    /// Whether this parser builds on its thread's recent fields (false once it moved threads).
    var usesRecentFields: Bool { !isDetached && recent != nil }

    /// The recent fields to build on: this thread's, looked up at the first field; nil once the
    /// parser is on another thread than that one (a cheap comparison of `pthread_self()`).
    private mutating func recentFields() -> LoopBound<RecentFields>? {
        if isDetached { return nil }
        if let recent, let owner {
            if pthread_equal(owner, pthread_self()) != 0 { return recent }
            // Moved: the fields built so far are this parser's own; the rest are built plainly.
            isDetached = true
            self.recent = nil
            return nil
        }
        let recent = RecentFields.current
        self.recent = recent
        owner = pthread_self()
        (headGeneration, fields) = recent.value.beginHead()
        if fields.isEmpty, expectedFields > 0 { fields.reserveCapacity(min(expectedFields, 64)) }
        return recent
    }

    /// A blank line: the end of an interim head (skipped) or of the final one.
    private mutating func blockEnded() throws(ServiceError) -> Bool {
        guard let status else { throw malformed("The response has no status line.") }
        if (100..<200).contains(status) && status != 101 {
            self = ResponseHeadParser(limit: limit)
            return false
        }
        isComplete = true
        if fieldCount < fields.count { fields.removeSubrange(fieldCount...) }
        recent?.value.commitHead(headGeneration, fields: fields)
        return true
    }

    /// The field `HTTPField(name:lenientValue:)` makes (every byte kept; NUL and CR were refused
    /// above), without its generic UTF-8 validation, which instantiates metadata at every call.
    /// Almost every value is legal as it is: its string, legalized by `HTTPField(name:value:)`,
    /// holds the very bytes, and the field is the lenient one. A value that changed on the way
    /// (invalid UTF-8 repaired, a control byte made a space) takes the lenient path instead.
    private static func field(_ name: HTTPField.Name, value: UnsafeRawBufferPointer) -> HTTPField {
        let field = HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
        let unchanged = field.withUnsafeBytesOfValue { kept in
            kept.count == value.count
                && (value.isEmpty || memcmp(kept.baseAddress!, value.baseAddress!, value.count) == 0)
        }
        return unchanged ? field : HTTPField(name: name, lenientValue: value)
    }

    private mutating func parseStatusLine(_ line: UnsafeBufferPointer<UInt8>) throws(ServiceError) -> Bool {
        // "HTTP/1.1 200 OK", "HTTP/2 200": "HTTP/", a version, one space, three digits, then
        // nothing or a space and the reason phrase.
        let version = line.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
        guard line.count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"),
            line[2] == UInt8(ascii: "T"), line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/"),
            version + 4 <= line.endIndex
        else {
            throw malformed("The response status line is invalid.")
        }
        var code = 0
        for index in version + 1...version + 3 {
            let digit = line[index] &- UInt8(ascii: "0")
            guard digit < 10 else { throw malformed("The response status line is invalid.") }
            code = code * 10 + Int(digit)
        }
        let after = version + 4
        guard code >= 100, after == line.endIndex || line[after] == UInt8(ascii: " ") else {
            throw malformed("The response status line is invalid.")
        }
        status = code
        reason =
            after < line.endIndex
            ? String(decoding: UnsafeBufferPointer(rebasing: line[(after + 1)...]), as: UTF8.self) : ""
        return false
    }

    private mutating func checkContentLength(_ value: UnsafeRawBufferPointer) throws(ServiceError) {
        // A list of identical values is allowed (RFC 9110, 8.6); different ones are not.
        try Self.forEachElement(of: value) { (element) throws(ServiceError) in
            guard !element.isEmpty, element.count <= 18 else {
                throw malformed("The response has an invalid Content-Length.")
            }
            var parsed: Int64 = 0
            for index in element {
                let digit = value[index] &- 0x30
                guard digit < 10 else { throw malformed("The response has an invalid Content-Length.") }
                parsed = parsed * 10 + Int64(digit)
            }
            if let contentLength, contentLength != parsed {
                throw malformed("The response has conflicting Content-Length values.")
            }
            contentLength = parsed
        }
    }

    /// Chunked must be the last transfer coding (RFC 9112, section 6.1). A coding after it
    /// leaves the body's end unknown (the connection's close, by section 6.3, where curl reads
    /// chunks): a broken server or a response-splitting attempt, never read. chunked repeated
    /// (on two lines, as some servers send it) is read once, as curl does.
    private mutating func checkTransferEncoding(_ value: UnsafeRawBufferPointer) throws(ServiceError) {
        try Self.forEachElement(of: value) { (element) throws(ServiceError) in
            guard !element.isEmpty else { return }
            let isChunked =
                element.count == 7 && zip(value[element], "chunked".utf8).allSatisfy { $0 | 0x20 == $1 }
            if chunkedSeen && !isChunked {
                throw malformed("The response applies a transfer coding after chunked, so its length is unknown.")
            }
            chunkedSeen = chunkedSeen || isChunked
        }
    }

    /// Calls `body` with each comma-separated element of a field's `value`, as the range of its
    /// bytes without surrounding spaces and tabs (empty for an empty element).
    @inline(__always)
    private static func forEachElement(
        of value: UnsafeRawBufferPointer, _ body: (Range<Int>) throws(ServiceError) -> Void
    ) throws(ServiceError) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last, value[first] == 0x20 || value[first] == 0x09 { first += 1 }
            while last > first, value[last - 1] == 0x20 || value[last - 1] == 0x09 { last -= 1 }
            try body(first..<last)
            start = end + 1
        }
    }

    private func malformed(_ message: String) -> ServiceError {
        ServiceError(.malformedResponse, message)
    }
}
