internal import HTTPTypes

/// Builds the final response head from the header lines curl hands over, and rejects what
/// curl lets through: bare CR or NUL in a line, obsolete line folding, conflicting
/// `Content-Length` values, more than one `Location`, and blocks over a size limit.
///
/// Interim 1xx heads are skipped. Lines after the final head (trailers) are ignored.
struct ResponseHeadParser {
    let limit: Int
    private(set) var status: Int?
    private(set) var reason = ""
    private(set) var fields = HTTPFields()
    private(set) var isComplete = false
    private(set) var contentLength: Int64?
    private var blockBytes = 0
    private var locationCount = 0

    init(limit: Int) { self.limit = limit }

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
        var line = raw[...]
        if line.last == UInt8(ascii: "\n") { line = line.dropLast() }
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        if line.contains(0) { throw malformed("A response header line contains a NUL byte.") }
        if line.contains(UInt8(ascii: "\r")) { throw malformed("A response header line contains a bare CR.") }

        if line.isEmpty {
            guard let status else { throw malformed("The response has no status line.") }
            if (100..<200).contains(status) && status != 101 {
                self = ResponseHeadParser(limit: limit)
                return false
            }
            isComplete = true
            return true
        }
        if status == nil { return try parseStatusLine(line) }
        if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
            throw malformed("The response uses obsolete header line folding.")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
            let name = HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self))
        else { throw malformed("A response header line has no valid field name.") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }

        if name == .contentLength { try checkContentLength(value) }
        if name == .location {
            locationCount += 1
            if locationCount > 1 { throw malformed("The response has more than one Location header.") }
        }
        fields.append(HTTPField(name: name, lenientValue: value))
        return false
    }

    private mutating func parseStatusLine(_ line: Slice<UnsafeRawBufferPointer>) throws(ServiceError) -> Bool {
        // "HTTP/1.1 200 OK", "HTTP/2 200": "HTTP/", a version, one space, three digits, then
        // nothing or a space and the reason phrase.
        let version = line.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
        guard line.starts(with: Self.httpPrefix), version + 4 <= line.endIndex else {
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
        reason = after < line.endIndex ? String(decoding: line[(after + 1)...], as: UTF8.self) : ""
        return false
    }

    private mutating func checkContentLength(_ value: Slice<UnsafeRawBufferPointer>) throws(ServiceError) {
        // A list of identical values is allowed (RFC 9110, 8.6); different ones are not.
        for element in value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var digits = element[...]
            while let first = digits.first, first == 0x20 || first == 0x09 { digits = digits.dropFirst() }
            while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw malformed("The response has an invalid Content-Length.")
            }
            let parsed = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
            if let contentLength, contentLength != parsed {
                throw malformed("The response has conflicting Content-Length values.")
            }
            contentLength = parsed
        }
    }

    private static let httpPrefix = Array("HTTP/".utf8)

    private func malformed(_ message: String) -> ServiceError {
        ServiceError(.malformedResponse, message)
    }
}
