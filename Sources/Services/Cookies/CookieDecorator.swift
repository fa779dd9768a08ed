public import HTTPTypes

/// Sends the cookies of a ``CookieJar`` with each request and stores the `Set-Cookie` fields
/// of each response: the coordinator's cookie support, off unless you add it.
///
/// Why it is never on by default: a server holds one coordinator for many users. One jar
/// shared by all of them would send the session cookie one user got with every other user's
/// requests. Use ``init(jar:)`` only where one user owns the coordinator (an app, a tool);
/// on a server use ``init(jars:partition:)``, which picks a jar per user.
///
/// ```swift
/// let jars = CookieJar.Partitioned()
/// var configuration = RequestCoordinator.Configuration()
/// configuration.decorators = [CookieDecorator(jars: jars)]
/// try await CookieJar.Partitioned.$current.withValue(userID) { try await profile.load(using: coordinator) }
/// ```
///
/// - Sending: the jar's matching cookies (domain, path, `Secure` only over https, not
///   expired; longer paths first) join a `Cookie` field the request already has; a cookie
///   whose name the caller already set is left out, so the caller's value wins.
/// - Storing: the `Set-Cookie` fields of every response the network gives, 304s and replays
///   included; cached responses store nothing. Redirects: the transport follows them itself
///   and hands back the final response only, so `Set-Cookie` of intermediate hops (a login's
///   302) is never seen, and `Set-Cookie` of a final response reached through redirects is
///   ignored, since its URL (and so the cookie's host and default path) is not known. To keep
///   cookies across redirects, use `RedirectPolicy.none` and follow `Location` yourself.
/// - Identity: `Cookie` is one of the coordinator's default credential headers, so loads with
///   different cookies never share a cache entry or a coalesced transfer; loads of different
///   jars never share a transfer either, even before they hold any cookie.
/// - Privacy: nothing here logs a cookie; `description` shows no value, and `HARRecorder`
///   redacts `Cookie` and `Set-Cookie`.
public struct CookieDecorator: RequestDecorator, ResponseObservingDecorator, CustomStringConvertible {
    private let resolve: @Sendable () -> CookieJar?
    private let partition: @Sendable () -> String?
    private let mode: String

    /// Uses one jar for every request: for a coordinator that serves one user only.
    public init(jar: CookieJar) {
        let identity = "jar:\(ObjectIdentifier(jar))"
        resolve = { jar }
        partition = { identity }
        mode = "one jar"
    }

    /// Uses the jar of the partition `partition` names for each request (by default the
    /// task-local ``CookieJar/Partitioned/current``). When it returns nil the request gets no
    /// cookie and its response's cookies are not stored.
    public init(
        jars: CookieJar.Partitioned, partition: @escaping @Sendable () -> String? = { CookieJar.Partitioned.current }
    ) {
        let identity = "jars:\(ObjectIdentifier(jars)):"
        resolve = { partition().map { jars.jar(for: $0) } }
        self.partition = { partition().map { identity + $0 } }
        mode = "partitioned"
    }

    public func decorate(_ request: inout HTTPRequest) async throws {
        guard let jar = resolve() else { return }
        let own = request.headerFields[values: .cookie].filter { !$0.isEmpty }
        let taken = Set(
            own.flatMap { $0.split(separator: ";") }.map { pair in
                CookieJar.Cookie.trimmed(pair.prefix { $0 != "=" })
            })
        let pairs = jar.cookies(for: request).filter { !taken.contains($0.name) }.map(\.pair)
        guard !pairs.isEmpty else { return }
        request.headerFields[.cookie] = (own + pairs).joined(separator: "; ")
    }

    func observe(_ response: HTTPResponse, redirects: Int, of request: HTTPRequest) {
        guard redirects == 0, response.headerFields[.setCookie] != nil, let jar = resolve() else { return }
        jar.store(from: response, for: request)
    }

    var coalescingPartition: String? { partition() }

    public var description: String { "CookieDecorator(\(mode))" }
}
