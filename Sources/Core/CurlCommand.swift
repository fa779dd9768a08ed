internal import FoundationEssentials
public import HTTPTypes

/// A request written as a `curl` command line, for bug reports and for trying a request by hand.
///
/// ```swift
/// var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/orders?api_key=abc")
/// request.headerFields[.authorization] = "Bearer secret"
/// let command = CurlCommand(request, body: .string(#"{"item": 7}"#, contentType: "application/json"))
/// print(command)
/// // curl -X POST 'https://api.example.com/v1/orders?api_key=REDACTED' \
/// //   -H 'Authorization: Bearer REDACTED' \
/// //   -H 'Content-Type: application/json' \
/// //   --data-binary '{"item": 7}'
/// ```
///
/// Secrets never reach the text. Masked with `REDACTED`:
/// - the credentials of `Authorization` and `Proxy-Authorization` (their scheme stays), the value
///   of every cookie in `Cookie` (their names stay), and any header field, query item, form field
///   or JSON string member whose name is secret-like: it contains `auth`, `token`, `secret`,
///   `password`, `passwd`, `signature`, `credential`, `session`, `cookie`, `private` or `apikey`
///   (ignoring `-` and `_`), or is `key`, `sig`, `code` or `pwd`; and the names in `maskingAlso`;
/// - the password of a URL's user information.
///
/// Every argument is single-quoted for a POSIX shell, so the command runs as printed. A body of
/// text up to 64 KiB is written inline; a file body is read from its path (`@path`); any other
/// body (binary, larger, or a multipart form with files) is described by a placeholder file name
/// that says what it was, since its bytes cannot be shown.
public struct CurlCommand: Sendable, CustomStringConvertible {
    /// The command's arguments after `curl`, unquoted.
    public let arguments: [String]

    /// The value that stands in for a secret.
    public static let redacted = "REDACTED"

    /// The command for `request` and its `body`, with secrets masked; `maskingAlso` names more
    /// header fields, query items, form fields and JSON members whose values are masked
    /// (compared without regard to case).
    public init(_ request: HTTPRequest, body: RequestBody? = nil, maskingAlso: [String] = []) {
        let masker = SecretMasker(extra: maskingAlso)
        var arguments: [String] = []
        switch request.method {
        case .get where body == nil: break
        case .head: arguments.append("--head")
        default: arguments += ["-X", request.method.rawValue]
        }
        arguments.append(masker.url(of: request))
        var hasContentType = false
        // HTTPFields keeps each cookie as a field of its own (as HTTP/2 sends them); HTTP/1.1
        // sends one `Cookie` line, and so does the command, where the first cookie was.
        var cookiesWritten = false
        for field in request.headerFields {
            if field.name == .contentType { hasContentType = true }
            if field.name == .cookie {
                if cookiesWritten { continue }
                cookiesWritten = true
                let cookies = request.headerFields[values: .cookie].joined(separator: "; ")
                arguments += ["-H", "Cookie: \(masker.fieldValue(HTTPField(name: .cookie, value: cookies)))"]
                continue
            }
            arguments += ["-H", "\(field.name.rawName): \(masker.fieldValue(field))"]
        }
        if let body {
            if !hasContentType {
                // Without a type of its own, curl would label the body a form: `Content-Type:`
                // with no value tells it to send none, as Courier does.
                arguments += ["-H", "Content-Type:" + (body.contentType.map { " " + $0 } ?? "")]
            }
            let contentType = request.headerFields[.contentType] ?? body.contentType
            arguments += ["--data-binary", masker.body(body, contentType: contentType)]
        }
        self.arguments = arguments
    }

    /// The command, ready to paste into a POSIX shell: one argument pair per line after the URL.
    public var description: String {
        var lines = ["curl"]
        var index = 0
        // The method and the URL share the first line; each option and its value get a line.
        while index < arguments.count {
            let argument = arguments[index]
            let takesValue = argument == "-X" || argument == "-H" || argument == "--data-binary"
            if takesValue, index + 1 < arguments.count {
                let pair = "\(argument) \(Self.quoted(arguments[index + 1]))"
                if argument == "-X" { lines[0] += " " + pair } else { lines.append("  " + pair) }
                index += 2
            } else if lines.count == 1 {
                lines[0] += " " + Self.quoted(argument)
                index += 1
            } else {
                lines.append("  " + Self.quoted(argument))
                index += 1
            }
        }
        return lines.joined(separator: " \\\n")
    }

    /// `text` as one word for a POSIX shell: single quotes, each `'` written as `'\''`. Options
    /// and plain words stay bare.
    static func quoted(_ text: String) -> String {
        if !text.isEmpty, text.utf8.allSatisfy({ isBare($0) }) { return text }
        var quoted = "'"
        for character in text {
            if character == "'" { quoted += #"'\''"# } else { quoted.append(character) }
        }
        return quoted + "'"
    }

    private static func isBare(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "/"):
            true
        default: false
        }
    }
}

/// What `CurlCommand` masks, and how.
struct SecretMasker {
    private let extra: Set<String>
    /// The most body bytes written inline.
    static let inlineBodyLimit = 64 * 1024

    init(extra: [String]) {
        self.extra = Set(extra.map { $0.lowercased() })
    }

    /// Whether a value named `name` is a secret.
    func isSecret(_ name: String) -> Bool {
        let lowered = name.lowercased()
        if extra.contains(lowered) { return true }
        let squeezed = lowered.filter { $0 != "-" && $0 != "_" }
        if ["key", "sig", "code", "pwd"].contains(squeezed) { return true }
        return [
            "auth", "token", "secret", "password", "passwd", "signature", "credential", "session", "cookie",
            "private", "apikey",
        ].contains { squeezed.contains($0) }
    }

    /// The request's URL with the password of its user information and secret query values masked.
    func url(of request: HTTPRequest) -> String {
        var authority = request.authority ?? ""
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            authority = String(authority[...colon]) + CurlCommand.redacted + String(authority[at...])
        }
        let path = request.path ?? "/"
        guard let mark = path.firstIndex(of: "?") else { return "\(request.scheme ?? "https")://\(authority)\(path)" }
        let query = maskedPairs(path[path.index(after: mark)...], separator: "&")
        return "\(request.scheme ?? "https")://\(authority)\(path[..<mark])?\(query)"
    }

    /// A header field's value, masked when the field carries credentials.
    func fieldValue(_ field: HTTPField) -> String {
        switch field.name {
        case .authorization, .proxyAuthorization:
            // The scheme helps a reader ("Bearer", "Basic"); the credentials never show.
            let scheme = field.value.split(separator: " ", maxSplits: 1).first.map(String.init)
            return field.value.contains(" ") ? "\(scheme ?? "") \(CurlCommand.redacted)" : CurlCommand.redacted
        case .cookie:
            return field.value.split(separator: ";").map { pair in
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "=") else { return String(trimmed) }
                return "\(trimmed[..<equals])=\(CurlCommand.redacted)"
            }.joined(separator: "; ")
        default:
            return isSecret(field.name.rawName) ? CurlCommand.redacted : field.value
        }
    }

    /// `name=value` pairs joined by `separator` (a query or a form), secret values masked. The
    /// names are compared after percent-decoding; the text is otherwise left as it was.
    func maskedPairs(_ text: Substring, separator: Character) -> String {
        let pairs = text.split(separator: separator, omittingEmptySubsequences: false).map {
            (pair: Substring) -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let rawName = String(pair[..<equals])
            let name = PercentEncoding.decode(rawName, plusIsSpace: true)
            return isSecret(name) ? rawName + "=" + CurlCommand.redacted : String(pair)
        }
        return pairs.joined(separator: String(separator))
    }

    /// The `--data-binary` argument for `body`.
    func body(_ body: RequestBody, contentType: String?) -> String {
        if case .file(let path) = body.storage { return "@" + path }
        if let stream = body.streamed {
            return "@streamed-body-\(stream.length.map { "\($0)-bytes" } ?? "of-unknown-length")-not-shown"
        }
        guard let bytes = body.inMemoryBytes else {
            let files = (body.segments ?? []).filter { if case .file = $0 { true } else { false } }.count
            return "@multipart-body-with-\(files)-file\(files == 1 ? "" : "s")-not-shown"
        }
        guard bytes.count <= Self.inlineBodyLimit, let text = Self.printableText(bytes) else {
            return "@binary-body-\(bytes.count)-bytes-not-shown"
        }
        let mediaType = contentType.map { MediaType.essence(of: $0) }
        if text.hasPrefix("@") {
            // curl would read a file named after the rest; the body is sent from standard input
            // instead only in a pipeline, so keep the body and let the placeholder say why.
            return "@body-starting-with-at-sign-not-shown"
        }
        switch mediaType {
        case "application/x-www-form-urlencoded":
            return maskedPairs(text[...], separator: "&")
        case let type? where type == "application/json" || type.hasSuffix("+json"):
            return maskedJSON(text)
        default:
            return text
        }
    }

    /// `bytes` as text when they are UTF-8 without control characters other than tab, CR and LF.
    static func printableText(_ bytes: Data) -> String? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let printable = text.unicodeScalars.allSatisfy { scalar in
            scalar == "\t" || scalar == "\n" || scalar == "\r" || (scalar.value >= 0x20 && scalar.value != 0x7f)
        }
        return printable ? text : nil
    }

    /// `json` with the string value of every secret-named member replaced, found by a scan of its
    /// tokens (no parse: invalid JSON stays as it was, secrets in it masked all the same).
    func maskedJSON(_ json: String) -> String {
        let scalars = Array(json.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        var pendingSecret = false  // the last string was a secret member's name, and a ':' followed
        var lastString: String?
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" {
                // A string token, to its closing quote (escapes skipped over).
                var end = index + 1
                var content = String.UnicodeScalarView()
                while end < scalars.count, scalars[end] != "\"" {
                    if scalars[end] == "\\", end + 1 < scalars.count {
                        content.append(scalars[end])
                        end += 1
                    }
                    content.append(scalars[end])
                    end += 1
                }
                if pendingSecret {
                    output.append(contentsOf: "\"\(CurlCommand.redacted)\"".unicodeScalars)
                    pendingSecret = false
                    lastString = nil
                } else {
                    output.append(contentsOf: scalars[index...min(end, scalars.count - 1)])
                    lastString = String(content)
                }
                index = end + 1
                continue
            }
            if pendingSecret, scalar == "-" || ("0"..."9").contains(scalar) || scalar == "t" || scalar == "f" {
                // A number or a boolean as a secret member's value (a PIN, a one-time code).
                while index < scalars.count, !",}] \t\r\n".unicodeScalars.contains(scalars[index]) { index += 1 }
                output.append(contentsOf: "\"\(CurlCommand.redacted)\"".unicodeScalars)
                pendingSecret = false
                continue
            }
            if scalar == ":" {
                pendingSecret = lastString.map(isSecret) ?? false
            } else if !scalar.properties.isWhitespace {
                // An object, an array or null after a secret name: left as it is (its own
                // members are masked by name).
                pendingSecret = false
                lastString = nil
            }
            output.append(scalar)
            index += 1
        }
        return String(output)
    }
}
