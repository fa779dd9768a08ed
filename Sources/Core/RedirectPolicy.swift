public import HTTPTypes

/// Which redirects a transfer follows, and what it carries across them.
///
/// Rules that no policy relaxes: only `http` and `https` targets; never from `https` to
/// `http`; the ``sensitiveHeaders`` are dropped when the target's scheme, host or port
/// differs. A 303 becomes a `GET` without body (so do 301 and 302 after a `POST`, as
/// browsers do); 307 and 308 keep the method and body.
public struct RedirectPolicy: Sendable, Hashable {
    /// How many redirects to follow before failing with `tooManyRedirects`. 0 follows none
    /// and returns the 3xx response as it is.
    public var maximumRedirects: Int
    /// Headers removed when a redirect leaves the original origin.
    public var sensitiveHeaders: [HTTPField.Name]

    /// Creates a policy.
    public init(
        maximumRedirects: Int,
        sensitiveHeaders: [HTTPField.Name] = [.authorization, .cookie, .proxyAuthorization]
    ) {
        self.maximumRedirects = maximumRedirects
        self.sensitiveHeaders = sensitiveHeaders
    }

    /// Follow up to 10 redirects.
    public static let `default` = RedirectPolicy(maximumRedirects: 10)
    /// Follow none: 3xx responses are returned to the caller.
    public static let none = RedirectPolicy(maximumRedirects: 0)
}
