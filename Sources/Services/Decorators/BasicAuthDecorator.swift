internal import FoundationEssentials
public import HTTPTypes

/// Adds `Authorization: Basic <base64(username:password)>` (RFC 7617) to every request.
///
/// The password never appears in `description` or `debugDescription`, so logging the
/// decorator (or a configuration holding it) is safe. `Authorization` is one of the
/// coordinator's default ``RequestCoordinator/Configuration/credentialHeaders``, so each user
/// has their own cache entries, and `HARRecorder` redacts it.
///
/// ```swift
/// let basic = try BasicAuthDecorator(username: "ada", password: "s3cret")
/// ```
public struct BasicAuthDecorator: RequestDecorator, CustomStringConvertible, CustomDebugStringConvertible {
    /// The user name sent (not secret).
    let username: String
    private let credentials: String

    /// Creates the decorator, or throws `invalidRequest` when `username` contains `:` (RFC 7617
    /// forbids it) or either value contains CR, LF or NUL.
    public init(username: String, password: String) throws {
        if username.contains(":") {
            throw ServiceError(.invalidRequest, "A Basic authentication user name cannot contain ':'.")
        }
        for (label, value) in [("user name", username), ("password", password)] where Self.hasControl(value) {
            throw ServiceError(.invalidRequest, "The Basic authentication \(label) contains CR, LF or NUL.")
        }
        self.username = username
        credentials = Data("\(username):\(password)".utf8).base64EncodedString()
    }

    public func decorate(_ request: inout HTTPRequest) async throws {
        request.headerFields[.authorization] = "Basic \(credentials)"
    }

    public var description: String { "BasicAuthDecorator(username: \(username), password: <redacted>)" }
    public var debugDescription: String { description }

    /// Whether `value` holds a character that would break a header line.
    static func hasControl(_ value: String) -> Bool {
        value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
