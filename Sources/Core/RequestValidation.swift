public import HTTPTypes

/// Checks made at the API edge, before anything is sent.
///
/// swift-http-types turns invalid bytes in field values into spaces, which hides a header
/// injection instead of reporting it; these functions report it as `invalidRequest`.
public enum RequestValidation {
    /// Whether `byte` may appear in a field value: visible ASCII, space, tab, and obs-text.
    @inline(__always)
    package static func isAllowedInValue(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Whether `value` may be sent as a field value (no CR, LF, NUL or other control character).
    package static func isValidValue(_ value: String) -> Bool { value.utf8.allSatisfy(isAllowedInValue) }

    /// Throws `invalidRequest` when `value` contains CR, LF, NUL or another control character.
    package static func validateHeaderValue(_ value: some StringProtocol, name: String) throws(ServiceError) {
        for byte in value.utf8 where !isAllowedInValue(byte) {
            throw ServiceError(
                .invalidRequest,
                "The value of header '\(name)' contains a control character (0x\(String(byte, radix: 16))).")
        }
    }

    /// Makes a field from raw strings, throwing `invalidRequest` instead of silently
    /// replacing invalid characters.
    public static func field(name: String, value: String) throws(ServiceError) -> HTTPField {
        guard let fieldName = HTTPField.Name(name) else {
            throw ServiceError(.invalidRequest, "'\(name.prefix(64))' is not a valid header name.")
        }
        try validateHeaderValue(value, name: name)
        return HTTPField(name: fieldName, lenientValue: Array(value.utf8))
    }

    /// Checks every field of a request, including those added after it was built (by
    /// decorators), and its path and authority.
    package static func validate(_ request: HTTPRequest) throws(ServiceError) {
        for field in request.headerFields {
            let ok = field.withUnsafeBytesOfValue { bytes in bytes.allSatisfy(isAllowedInValue) }
            if !ok {
                throw ServiceError(
                    .invalidRequest,
                    "The value of header '\(field.name.rawName)' contains a control character.")
            }
        }
        guard let scheme = request.scheme, scheme == "http" || scheme == "https" else {
            throw ServiceError(.invalidRequest, "Only http and https URLs are supported.")
        }
        guard let authority = request.authority, !authority.isEmpty else {
            throw ServiceError(.invalidRequest, "The request has no host.")
        }
        // Scanned as contiguous UTF-8: a `utf8` view's iterator costs several times as much a byte.
        var host = authority
        let hostIsValid = host.withUTF8 { bytes in
            !bytes.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") }
        }
        guard hostIsValid else { throw ServiceError(.invalidRequest, "The host contains an invalid character.") }
        var path = request.path ?? "/"
        guard path.withUTF8({ bytes in !bytes.contains(where: PercentEncoding.mustBeEncodedInTarget) }) else {
            throw ServiceError(
                .invalidRequest, "The path contains a space, a control or a non-ASCII character: percent-encode it.")
        }
    }
}
