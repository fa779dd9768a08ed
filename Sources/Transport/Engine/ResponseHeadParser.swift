internal import CourierCore
internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

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
        if let start = line.base.baseAddress.map({ $0 + line.startIndex }), !line.isEmpty {
            if memchr(start, 0, line.count) != nil { throw malformed("A response header line contains a NUL byte.") }
            if memchr(start, 0x0D, line.count) != nil { throw malformed("A response header line contains a bare CR.") }
        }

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
            let name = Self.commonName(line[..<colon]) ?? HTTPField.Name(String(decoding: line[..<colon], as: UTF8.self))
        else { throw malformed("A response header line has no valid field name.") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }

        guard fields.count < FieldLimits.maximumCount else {
            throw ServiceError(.headersTooLarge, "The response has more than \(FieldLimits.maximumCount) header fields.")
        }
        if name == .contentLength { try checkContentLength(value) }
        if name == .location {
            locationCount += 1
            if locationCount > 1 { throw malformed("The response has more than one Location header.") }
        }
        fields.append(Self.field(name, value: value))
        return false
    }

    /// The field `HTTPField(name:lenientValue:)` makes, without its generic UTF-8 validation,
    /// which instantiates metadata at every call: a value of visible ASCII, spaces and tabs,
    /// with no space or tab at either end (almost every value, once trimmed), is legal as it
    /// is, so the field's string is built directly and holds the same bytes.
    private static func field(_ name: HTTPField.Name, value: Slice<UnsafeRawBufferPointer>) -> HTTPField {
        let bytes = UnsafeRawBufferPointer(rebasing: value)
        guard bytes.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 < 0x7F) }) else {
            return HTTPField(name: name, lenientValue: value)
        }
        return HTTPField(name: name, value: String(decoding: bytes, as: UTF8.self))
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

    /// Field names most responses carry, by length, each as sent in its usual spelling and in
    /// lowercase (HTTP/2). A name matching one byte for byte needs no validation or lowercasing.
    private static let commonNames: [[(bytes: [UInt8], name: HTTPField.Name)]] = {
        let names: [HTTPField.Name] = [
            .contentType, .contentLength, .date, .server, .connection, .lastModified, .eTag, .acceptRanges,
            .cacheControl, .expires, .vary, .location, .transferEncoding, .contentEncoding, .setCookie, .age,
        ]
        var table = [[(bytes: [UInt8], name: HTTPField.Name)]](repeating: [], count: 32)
        for name in names {
            for spelling in [name, HTTPField.Name(name.canonicalName)].compactMap({ $0 }) {
                let bytes = Array(spelling.rawName.utf8)
                if bytes.count < table.count, !table[bytes.count].contains(where: { $0.bytes == bytes }) {
                    table[bytes.count].append((bytes, spelling))
                }
            }
        }
        return table
    }()

    private static func commonName(_ raw: Slice<UnsafeRawBufferPointer>) -> HTTPField.Name? {
        guard raw.count < commonNames.count, let base = raw.base.baseAddress else { return nil }
        for candidate in commonNames[raw.count]
        where candidate.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, base + raw.startIndex, raw.count) == 0 }) {
            return candidate.name
        }
        return nil
    }

    private func malformed(_ message: String) -> ServiceError {
        ServiceError(.malformedResponse, message)
    }
}
