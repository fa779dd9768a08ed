internal import CourierServices
internal import Foundation
internal import HTTPTypes
internal import OpenAPIRuntime

extension CourierClientTransport {
    /// `request` (whose path is relative to the server) aimed at `baseURL`: its scheme and
    /// authority, and its path as a prefix. The runtime has already percent-encoded the path
    /// and query; they are kept byte for byte.
    static func absolute(_ request: HTTPRequest, baseURL: URL) throws(ServiceError) -> HTTPRequest {
        guard let scheme = baseURL.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ServiceError(
                .invalidRequest, "The server URL '\(baseURL.absoluteString.prefix(100))' is not http(s).")
        }
        guard var host = baseURL.host(percentEncoded: true), !host.isEmpty else {
            throw ServiceError(.invalidRequest, "The server URL '\(baseURL.absoluteString.prefix(100))' has no host.")
        }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }  // an IPv6 literal
        let authority = baseURL.port.map { "\(host):\($0)" } ?? host
        var prefix = baseURL.path(percentEncoded: true)
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let relative = request.path ?? "/"
        var absolute = request
        absolute.scheme = scheme
        absolute.authority = authority
        absolute.path = prefix + (relative.hasPrefix("/") ? relative : "/" + relative)
        return absolute
    }
}
