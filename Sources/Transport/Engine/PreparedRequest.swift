internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

/// A request reduced to what curl needs: computed off the loop thread.
struct PreparedRequest: Sendable {
    var method: HTTPRequest.Method
    var url: String
    var headerLines: [String]
    var body: RequestBody?
    var options: TransferOptions
    /// Whether a 3xx with a `Location` ends this hop so that the transport can follow it.
    var stopsAtRedirect: Bool

    init(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) {
        method = request.method
        url = Self.url(scheme: request.scheme ?? "http", authority: request.authority ?? "", path: request.path ?? "/")
        var lines: [String] = []
        lines.reserveCapacity(request.headerFields.count + 4)
        var hasAcceptEncoding = false
        var hasContentType = false
        var cookieLine: Int?
        for field in request.headerFields {
            if field.name == .acceptEncoding { hasAcceptEncoding = true }
            if field.name == .contentType { hasContentType = true }
            // HTTPFields splits `Cookie` into one field per pair; HTTP/1.1 wants one line
            // (RFC 6265, section 5.4), so the pairs are joined back with "; ".
            if field.name == .cookie, !field.value.isEmpty {
                if let index = cookieLine {
                    lines[index] += "; " + field.value
                } else {
                    cookieLine = lines.count
                    lines.append("\(field.name.rawName): \(field.value)")
                }
                continue
            }
            // An empty value needs curl's "Name;" form; "Name:" would remove the header.
            lines.append(field.value.isEmpty ? "\(field.name.rawName);" : "\(field.name.rawName): \(field.value)")
        }
        if options.decompressesResponses && !hasAcceptEncoding {
            lines.append(Self.acceptEncodingLine)
        }
        if let body, !hasContentType {
            if let contentType = body.contentType, RequestValidation.isValidValue(contentType) {
                lines.append("Content-Type: \(contentType)")
            } else {
                lines.append("Content-Type:")  // curl would otherwise claim a form
            }
        }
        if body != nil {
            lines.append("Expect:")  // no 100-continue round trip before uploads
        }
        headerLines = lines
        self.body = body
        self.options = options
        stopsAtRedirect = options.redirects.maximumRedirects > 0
    }

    private static let acceptEncodingLine = "Accept-Encoding: \(ContentEncoding.acceptHeader)"

    /// `scheme://authority/path`, copied into one buffer: appending the parts costs about
    /// 300 instructions each, an interpolation more.
    private static func url(scheme: String, authority: String, path: String) -> String {
        var scheme = scheme
        var authority = authority
        var path = path
        let count = scheme.utf8.count + 3 + authority.utf8.count + path.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var end = scheme.withUTF8 { copy($0, to: base) }
            end[0] = UInt8(ascii: ":")
            end[1] = UInt8(ascii: "/")
            end[2] = UInt8(ascii: "/")
            end += 3
            end = authority.withUTF8 { copy($0, to: end) }
            end = path.withUTF8 { copy($0, to: end) }
            return end - base
        }
    }

    /// Copies `bytes` to `target`; returns the address after them.
    private static func copy(_ bytes: UnsafeBufferPointer<UInt8>, to target: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        guard let source = bytes.baseAddress else { return target }
        target.update(from: source, count: bytes.count)
        return target + bytes.count
    }

    /// Whether `key` is this request's ``originKey``, found without building the key: the URL
    /// starts with it and, past it, ends or goes on with the path's slash.
    func hasOrigin(_ key: String) -> Bool {
        guard options.unixSocketPath == nil else { return originKey == key }
        var url = url
        var key = key
        let matches = url.withUTF8 { url in
            key.withUTF8 { key in
                guard url.count >= key.count, let urlBase = url.baseAddress, let keyBase = key.baseAddress,
                    memcmp(urlBase, keyBase, key.count) == 0
                else { return false }
                return url.count == key.count || url[key.count] == UInt8(ascii: "/")
            }
        }
        assert(matches == (originKey == key), "hasOrigin disagrees with originKey")
        return matches
    }

    /// What curl's per-host connection limit counts by: `scheme://authority`, and the Unix
    /// socket when one is used.
    var originKey: String {
        // `url` is `scheme://authority/path`: the origin ends at the third slash. A plain scan:
        // `firstRange(of:)` costs some 10,000 instructions a request.
        let bytes = url.utf8
        var end = bytes.endIndex
        var slashes = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: "/") {
            slashes += 1
            if slashes == 3 {
                end = index
                break
            }
        }
        let key = url[..<end]
        guard let socket = options.unixSocketPath else { return String(key) }
        return socket + " " + key
    }
}
