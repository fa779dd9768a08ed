internal import FoundationEssentials

extension HTTPCacheRules {
    /// A byte range of a stored representation (RFC 9110, section 14.1.2): inclusive bounds.
    package struct ByteRange: Sendable, Hashable {
        /// The first byte.
        package var first: Int
        /// The last byte.
        package var last: Int

        /// A range from `first` to `last`, inclusive.
        package init(first: Int, last: Int) {
            self.first = first
            self.last = last
        }
    }

    /// The one byte range `value` (a `Range` field) asks of a representation of `length` bytes:
    /// `bytes=a-b`, `bytes=a-` or `bytes=-n`, clipped to the length. Nil for what the cache
    /// leaves to the server: another unit, several ranges, a malformed or unsatisfiable range.
    package static func byteRange(_ value: String, length: Int) -> ByteRange? {
        let text = value.trimmedSpaces
        guard text.count > 6, text.prefix(6).lowercased() == "bytes=" else { return nil }
        let spec = text.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let start = spec[..<dash]
        let end = spec[spec.index(after: dash)...]
        func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(text)
        }
        if start.isEmpty {
            guard let suffix = number(end), suffix > 0, length > 0 else { return nil }
            return ByteRange(first: max(0, length - suffix), last: length - 1)
        }
        guard let first = number(start), first < length else { return nil }
        if end.isEmpty { return ByteRange(first: first, last: length - 1) }
        guard let last = number(end), last >= first else { return nil }
        return ByteRange(first: first, last: min(last, length - 1))
    }

    /// A stored 200 answering a request with a `Range` field: a 206 with `Content-Range` and
    /// that part of the body (section 4.3.2 lets a cache answer range requests from a complete
    /// stored response). Nil when ``byteRange(_:length:)`` is nil or the entry is not a 200:
    /// the request then goes to the network, whose 206 is passed on and never stored.
    package static func partial(_ entry: CachedResponse, range value: String) -> CachedResponse? {
        guard entry.status == .ok, let range = byteRange(value, length: entry.body.count) else { return nil }
        var part = entry
        part.status = .partialContent
        part.headerFields[.contentRange] = "bytes \(range.first)-\(range.last)/\(entry.body.count)"
        let start = entry.body.startIndex
        part.body = Data(entry.body[(start + range.first)...(start + range.last)])
        return part
    }
}
