internal import CourierCore
internal import HTTPTypes
#if canImport(Glibc)
internal import Glibc
#endif

/// The response head as the loop thread keeps it: the raw lines of the final block, and only
/// what the loop itself needs (where the head ends, the status, whether a `Location` came, a
/// `Content-Length` to size the body buffer). Building the `HTTPResponse` and checking every
/// line (``ResponseHeadParser``) happens later, on the thread of the task that awaits the
/// response, so the one loop thread spends its time on curl.
struct RawResponseHead: Sendable {
    let limit: Int
    /// The final block's lines, each with its line ending.
    private(set) var lines: [UInt8] = []
    private(set) var status: Int?
    private(set) var isComplete = false
    private(set) var hasLocation = false
    /// The first `Content-Length` value, for sizing only (validated by the parser later).
    private(set) var contentLength: Int64?
    private var blockBytes = 0
    /// Lines stored, a hint for the parser's storage.
    private var fieldLines = 0

    init(limit: Int) { self.limit = limit }

    /// Takes one raw line from curl. Returns `true` when it completed the final head.
    mutating func consume(_ raw: UnsafeRawBufferPointer) throws(ServiceError) -> Bool {
        if isComplete { return false }
        blockBytes += raw.count
        if blockBytes > limit {
            throw ServiceError(.headersTooLarge, "The response headers exceed the limit of \(limit) bytes.")
        }
        var length = raw.count
        if length > 0, raw[length - 1] == UInt8(ascii: "\n") { length -= 1 }
        if length > 0, raw[length - 1] == UInt8(ascii: "\r") { length -= 1 }
        if length == 0 {
            guard let status else { throw ServiceError(.malformedResponse, "The response has no status line.") }
            if (100..<200).contains(status) && status != 101 {
                // An interim head: the final one follows.
                self = RawResponseHead(limit: limit)
                return false
            }
            isComplete = true
            return true
        }
        if status == nil {
            status = Self.statusCode(raw, length: length)
            guard status != nil else { throw ServiceError(.malformedResponse, "The response status line is invalid.") }
            if lines.capacity == 0 { lines.reserveCapacity(512) }
        } else if Self.hasPrefix(raw, length: length, "location:") {
            hasLocation = true
        } else if contentLength == nil, Self.hasPrefix(raw, length: length, "content-length:") {
            contentLength = Self.digits(raw, from: 15, length: length)
        }
        lines.append(contentsOf: raw)
        fieldLines += 1
        return false
    }

    /// The first `Location` value, read from the stored lines (for error reports only).
    var location: String? {
        for line in lines.split(separator: UInt8(ascii: "\n")) {
            let text = Substring(decoding: line.filter { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
            guard text.lowercased().hasPrefix("location:") else { continue }
            return String(text.dropFirst("location:".count).trimmingASCIIWhitespace())
        }
        return nil
    }

    /// The checked head, built from the stored lines.
    func response() throws(ServiceError) -> HTTPResponse { try parsed().response }

    /// The checked head, and whether it has a `Content-Encoding` field.
    func parsed() throws(ServiceError) -> (response: HTTPResponse, hasContentEncoding: Bool) {
        var parser = ResponseHeadParser(limit: Int.max, expectedFields: fieldLines)
        var completed = false
        var failure: ServiceError?
        lines.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            do throws(ServiceError) {
                var start = 0
                while start < bytes.count {
                    var end = bytes.count
                    if let newline = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start) {
                        end = UnsafeRawPointer(newline) - base + 1
                    }
                    completed = try parser.consume(UnsafeRawBufferPointer(start: base + start, count: end - start))
                    start = end
                }
            } catch {
                failure = error
            }
        }
        if failure == nil, !completed {
            completed = Self.blankLine.withUnsafeBytes { blank in
                do throws(ServiceError) { return try parser.consume(blank) } catch { failure = error; return false }
            }
        }
        if let failure { throw failure }
        guard completed, let response = parser.response else {
            throw ServiceError(.malformedResponse, "The response head is incomplete.")
        }
        return (response, parser.hasContentEncoding)
    }

    private static let blankLine: [UInt8] = [UInt8(ascii: "\r"), UInt8(ascii: "\n")]

    /// The three digits after "HTTP/x ", or nil.
    private static func statusCode(_ raw: UnsafeRawBufferPointer, length: Int) -> Int? {
        guard length >= 10, raw[0] == UInt8(ascii: "H"), raw[1] == UInt8(ascii: "T"),
            raw[2] == UInt8(ascii: "T"), raw[3] == UInt8(ascii: "P"), raw[4] == UInt8(ascii: "/"),
            let space = raw[..<length].firstIndex(of: UInt8(ascii: " ")), space + 3 < length
        else { return nil }
        var code = 0
        for index in space + 1...space + 3 {
            let digit = raw[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            code = code * 10 + Int(digit)
        }
        return code >= 100 ? code : nil
    }

    /// Whether the line starts with `prefix` (lowercase ASCII), ignoring case.
    private static func hasPrefix(_ raw: UnsafeRawBufferPointer, length: Int, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard length >= count else { return false }
        let expected = prefix.utf8Start
        for index in 0..<count where raw[index] | 0x20 != expected[index] | 0x20 { return false }
        return true
    }

    private static func digits(_ raw: UnsafeRawBufferPointer, from start: Int, length: Int) -> Int64? {
        var index = start
        while index < length, raw[index] == 0x20 || raw[index] == 0x09 { index += 1 }
        var value: Int64 = 0
        var seen = 0
        while index < length, raw[index] &- UInt8(ascii: "0") < 10, seen < 18 {
            value = value * 10 + Int64(raw[index] &- UInt8(ascii: "0"))
            seen += 1
            index += 1
        }
        return seen > 0 ? value : nil
    }
}
