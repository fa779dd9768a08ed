internal import CCurl

/// What the libcurl this process loaded can do.
public struct CurlFeatures: Sendable, Hashable, CustomStringConvertible {
    /// libcurl's version, e.g. "7.88.1".
    public let version: String
    /// The TLS library, e.g. "OpenSSL/3.0.19".
    public let tlsLibrary: String
    /// Whether HTTP/2 is available.
    public let supportsHTTP2: Bool
    /// Whether Unix-domain sockets are available.
    public let supportsUnixSockets: Bool
    /// Whether a cleartext HTTP/2 connection with prior knowledge can take a second request:
    /// libcurl 8.0.0 and later (curl bug #10634 fails it in 7.x).
    let reusesCleartextHTTP2Connections: Bool

    /// The features of the loaded libcurl.
    public static let current: CurlFeatures = {
        CurlLibrary.initializeOnce()
        let info = curl_version_info(courier_version_now)!.pointee
        let features = info.features
        return CurlFeatures(
            version: String(cString: info.version),
            tlsLibrary: info.ssl_version.map { String(cString: $0) } ?? "none",
            supportsHTTP2: features & courier_feature_http2 != 0,
            supportsUnixSockets: features & courier_feature_unix_sockets != 0,
            reusesCleartextHTTP2Connections: info.version_num >= 0x08_00_00)
    }()

    public var description: String {
        "libcurl \(version), \(tlsLibrary), HTTP/2: \(supportsHTTP2 ? "yes" : "no"), Unix sockets: \(supportsUnixSockets ? "yes" : "no")"
    }
}
