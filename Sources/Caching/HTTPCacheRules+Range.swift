internal import FoundationEssentials
internal import HTTPTypes

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

    /// A stored response answering a request with a `Range` field: a 206 with `Content-Range`
    /// and that part of the body (section 4.3.2 lets a cache answer range requests from what
    /// it holds). The entry is a 200, or a stored part (``storedPart(_:)``) that holds every
    /// byte asked for. Nil when ``byteRange(_:length:)`` is nil or the entry does not hold the
    /// range: the request then goes to the network.
    package static func partial(_ entry: CachedResponse, range value: String) -> CachedResponse? {
        let held: ByteRange
        let length: Int
        switch entry.status {
        case .ok:
            (held, length) = (ByteRange(first: 0, last: entry.body.count - 1), entry.body.count)
        case .partialContent:
            guard let part = storedPart(entry) else { return nil }
            (held, length) = (part.range, part.length)
        default:
            return nil
        }
        guard let range = byteRange(value, length: length), range.first >= held.first, range.last <= held.last
        else { return nil }
        var answer = entry
        answer.status = .partialContent
        answer.headerFields[.contentRange] = "bytes \(range.first)-\(range.last)/\(length)"
        answer.headerFields[.contentLength] = nil
        let start = entry.body.startIndex - held.first
        answer.body = Data(entry.body[(start + range.first)...(start + range.last)])
        return answer
    }

    /// What a stored 206 holds (section 3.3): one range of a representation whose length its
    /// `Content-Range` gives (`bytes a-b/n`), the body exactly that range, and a strong `ETag`
    /// (without one, parts of different versions could not be told apart). Nil for any other
    /// response, which the cache does not keep as a part.
    package static func storedPart(_ response: CachedResponse) -> (range: ByteRange, length: Int, eTag: String)? {
        guard response.status == .partialContent,
            let eTag = strongETag(response.headerFields),
            case let values = response.headerFields[values: .contentRange], values.count == 1,
            let held = contentRange(values[0]),
            response.body.count == held.range.last - held.range.first + 1
        else { return nil }
        return (held.range, held.length, eTag)
    }

    /// A new part combined with what is stored (section 3.4): when the stored entry is a part
    /// of the same representation (the same strong `ETag`, length and variant) and the two
    /// ranges touch or overlap, one part holding both (the new bytes win where they overlap),
    /// or the complete response, a 200, once it holds every byte. Otherwise the new part alone.
    /// Nil, nothing to store, when `part` is not a part the cache keeps (``storedPart(_:)``), or
    /// when the whole representation it belongs to is stored already.
    package static func combined(_ part: CachedResponse, with stored: CachedResponse?) -> CachedResponse? {
        guard let new = storedPart(part) else { return nil }
        if let stored, stored.status == .ok, stored.variant == part.variant, stored.body.count == new.length,
            strongETag(stored.headerFields) == new.eTag
        {
            return nil
        }
        var result = part
        var held = new.range
        if let stored, stored.variant == part.variant, let old = storedPart(stored), old.eTag == new.eTag,
            old.length == new.length, old.range.first <= new.range.last + 1, new.range.first <= old.range.last + 1
        {
            held = ByteRange(first: min(old.range.first, new.range.first), last: max(old.range.last, new.range.last))
            var bytes = Data(count: held.last - held.first + 1)
            bytes.replaceSubrange(
                (old.range.first - held.first)..<(old.range.last - held.first + 1), with: stored.body)
            bytes.replaceSubrange(
                (new.range.first - held.first)..<(new.range.last - held.first + 1), with: part.body)
            result.body = bytes
        }
        if held.first == 0, held.last == new.length - 1 {
            result.status = .ok
            result.headerFields[.contentRange] = nil
            result.headerFields[.contentLength] = "\(new.length)"
        } else {
            result.headerFields[.contentRange] = "bytes \(held.first)-\(held.last)/\(new.length)"
            result.headerFields[.contentLength] = nil
        }
        return result
    }

    /// `bytes a-b/n` (a `Content-Range` of a 206): the range and the representation's length;
    /// nil for another unit, an unknown length (`*`), or bounds out of order or past the length.
    static func contentRange(_ value: String) -> (range: ByteRange, length: Int)? {
        let text = value.trimmedSpaces
        guard text.hasPrefix("bytes "), let dash = text.firstIndex(of: "-"), let slash = text.firstIndex(of: "/"),
            dash < slash
        else { return nil }
        func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return nil
            }
            return Int(text)
        }
        guard let first = number(text[text.index(text.startIndex, offsetBy: 6)..<dash]),
            let last = number(text[text.index(after: dash)..<slash]),
            let length = number(text[text.index(after: slash)...]),
            first <= last, last < length
        else { return nil }
        return (ByteRange(first: first, last: last), length)
    }

    /// The `ETag` of `fields` when it is one strong entity tag (not `W/`), else nil.
    static func strongETag(_ fields: HTTPFields) -> String? {
        let values = fields[values: .eTag]
        guard values.count == 1 else { return nil }
        let tag = values[0].trimmedSpaces
        guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") else { return nil }
        return tag
    }
}
