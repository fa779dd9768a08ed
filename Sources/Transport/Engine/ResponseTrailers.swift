internal import CourierCore
internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

/// The trailer section of a response: the field lines curl hands to the header callback after
/// the final head (the last chunk's trailers on HTTP/1.1, a trailing HEADERS frame on HTTP/2).
///
/// The same rules and limits as the head's fields (``ResponseHeadParser``): no NUL or bare CR,
/// no obsolete folding, a valid name before a colon, at most `limit` bytes and
/// ``FieldLimits/maximumCount`` fields. A line that breaks one fails the transfer with
/// `malformedResponse` or `headersTooLarge`. Trailers stay apart from the head: none is merged
/// into it (RFC 9110, section 6.5.1), so a trailer cannot change how the body was framed or
/// decoded.
struct ResponseTrailers {
    let limit: Int
    private(set) var fields = HTTPFields()
    private var bytes = 0

    init(limit: Int) { self.limit = limit }

    /// Consumes one raw line (with its line ending); an empty line (the section's end) is
    /// skipped.
    mutating func consume(_ raw: UnsafeRawBufferPointer) throws(ServiceError) {
        bytes += raw.count
        if bytes > limit {
            throw ServiceError(.headersTooLarge, "The response trailers exceed the limit of \(limit) bytes.")
        }
        var count = raw.count
        guard count > 0, let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        if base[count - 1] == UInt8(ascii: "\n") { count -= 1 }
        if count > 0, base[count - 1] == UInt8(ascii: "\r") { count -= 1 }
        if count == 0 { return }
        let line = UnsafeBufferPointer(start: base, count: count)
        if line.contains(0) { throw malformed("A response trailer line contains a NUL byte.") }
        if line.contains(0x0D) { throw malformed("A response trailer line contains a bare CR.") }
        if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            throw malformed("A response trailer uses obsolete line folding.")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
            let name = HTTPField.Name(String(decoding: UnsafeBufferPointer(rebasing: line[..<colon]), as: UTF8.self))
        else {
            throw malformed("A response trailer line has no valid field name.")
        }
        guard fields.count < FieldLimits.maximumCount else {
            throw ServiceError(
                .headersTooLarge, "The response has more than \(FieldLimits.maximumCount) trailer fields.")
        }
        var start = colon + 1
        var end = count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(line)[start..<end])
        fields.append(HTTPField(name: name, lenientValue: value))
    }

    private func malformed(_ message: String) -> ServiceError {
        ServiceError(.malformedResponse, message)
    }
}
