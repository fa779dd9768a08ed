public import Logging

/// Per-transfer settings. Every property has a production default.
public struct TransferOptions: Sendable {
    /// Time allowed to establish the connection (TCP and TLS). 10 seconds by default.
    public var connectTimeout: Duration? = .seconds(10)
    /// Time allowed for the whole transfer, redirects excluded, counted from when it is sent:
    /// time spent waiting for a free connection (behind the transport's connection limits)
    /// counts. `nil` (no limit) by default.
    public var timeout: Duration?
    /// Longest time without a byte in either direction, once connected, before the transfer
    /// fails with `timedOut`: a server that stalls before its head, after it or mid-body.
    /// 60 seconds by default (as `URLSession`'s request timeout); whole seconds, rounded up;
    /// `nil` removes the limit. A streamed body paused because its consumer lags is not idle.
    /// curl averages the speed over the last 5 seconds, so a stall right after some bytes ends
    /// up to 5 seconds past the limit.
    public var idleTimeout: Duration? = .seconds(60)
    /// Abort when the transfer is slower than this for this long. `nil` by default. When
    /// set, it replaces ``idleTimeout`` (both use curl's one speed check).
    public var lowSpeedLimit: LowSpeedLimit?
    /// Which redirects to follow. ``RedirectPolicy/default`` by default.
    public var redirects: RedirectPolicy = .default
    /// Certificate verification, custom CAs, pinning and client certificates.
    public var tls = TLSOptions()
    /// Proxy use. ``ProxyOptions/none`` by default: environment variables are ignored.
    public var proxy: ProxyOptions = .none
    /// Connect through this Unix-domain socket instead of TCP. `nil` by default.
    public var unixSocketPath: String?
    /// Largest body accepted, counted both on the wire and after inflating (a guard
    /// against decompression bombs). 64 MiB by default; `nil` removes the limit, which
    /// suits `CurlTransport.download(_:body:to:options:)` of large files.
    public var maximumBodySize: Int? = 64 << 20
    /// Largest response header block accepted. 64 KiB by default.
    public var maximumHeaderSize = 64 << 10
    /// Whether Courier asks for and inflates gzip and deflate bodies. `true` by default.
    /// When `false`, no `Accept-Encoding` is added and bodies are delivered as received.
    public var decompressesResponses = true
    /// Which HTTP version to negotiate. ``HTTPVersionPreference/automatic`` by default.
    public var httpVersion: HTTPVersionPreference = .automatic
    /// Receives upload and download progress. `nil` by default.
    public var progress: ProgressReporter?
    /// The logger of the request this transfer serves: the transport writes its `.trace` and
    /// `.debug` lines for the transfer here (redirects followed, a hop that failed), with the
    /// logger's metadata, so they carry the caller's `courier.request.id`. Never anything at
    /// `.info` or above. `nil` (the transport's background logger, if any) by default; the
    /// coordinator sets it to the load's logger. Not part of a request's identity: loads that
    /// share one transfer log it to the logger of the load that started it.
    public var logger: Logger?
    /// Set by a caller that already checked the request with ``RequestValidation/validate(_:)``
    /// (the coordinator, once per load), so the transport does not check it again.
    package var requestIsValidated = false
    /// Cancels the transfer from outside its task (see ``TransferCancellation``); honoured by
    /// transports that conform to ``HonoursTransferCancellation``. `nil` by default.
    package var cancellation: TransferCancellation?

    /// Creates default options.
    public init() {}
}

/// A minimum speed: slower than `bytesPerSecond` for `duration` times the transfer out.
public struct LowSpeedLimit: Sendable, Hashable {
    /// The minimum average speed.
    public var bytesPerSecond: Int
    /// How long the transfer may stay below it.
    public var duration: Duration

    /// Creates a limit.
    public init(bytesPerSecond: Int, duration: Duration) {
        self.bytesPerSecond = bytesPerSecond
        self.duration = duration
    }
}

/// Which HTTP version to use.
public struct HTTPVersionPreference: Sendable, Hashable {
    package enum Mode: Sendable, Hashable { case automatic, http1, http2PriorKnowledge }
    package let mode: Mode

    /// HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 otherwise.
    public static let automatic = HTTPVersionPreference(mode: .automatic)
    /// HTTP/1.1 only.
    public static let http1 = HTTPVersionPreference(mode: .http1)
    /// HTTP/2 without negotiation, also over cleartext (h2c with prior knowledge).
    public static let http2PriorKnowledge = HTTPVersionPreference(mode: .http2PriorKnowledge)
}

/// Proxy use for a transfer.
///
/// Courier ignores `http_proxy`, `https_proxy` and `no_proxy` unless you choose
/// ``environment``: a library inside a server should not change where its traffic goes
/// because of a variable someone set for another program.
public struct ProxyOptions: Sendable, Hashable {
    package enum Mode: Sendable, Hashable {
        case none
        case environment
        case url(String, bypass: [String])
    }

    package let mode: Mode

    /// Connect directly; proxy environment variables are ignored. The default.
    public static let none = ProxyOptions(mode: .none)
    /// Follow `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` as curl reads them.
    public static let environment = ProxyOptions(mode: .environment)
    /// Use this proxy (`http://host:port`, `socks5://…`), except for the hosts in `bypass`.
    public static func url(_ url: String, bypass: [String] = []) -> ProxyOptions {
        ProxyOptions(mode: .url(url, bypass: bypass))
    }
}

/// TLS settings. Verification is on by default.
public struct TLSOptions: Sendable, Hashable {
    /// Whether the server certificate and host name are verified. `true` by default;
    /// turning it off makes the connection readable by anyone in between.
    public var verifiesPeer = true
    /// A PEM file of certificate authorities to trust instead of the system's.
    public var certificateAuthorityFile: String?
    /// Accepted public keys as `sha256//<base64>` pins; the connection fails with
    /// `pinningFailed` unless the server's key matches one. Empty (no pinning) by default.
    public var pinnedPublicKeys: [String] = []
    /// A client certificate for mutual TLS.
    public var clientCertificate: ClientCertificate?

    /// Creates default TLS options.
    public init() {}
}

/// A client certificate and its private key, both PEM files.
public struct ClientCertificate: Sendable, Hashable, CustomStringConvertible {
    /// Path of the PEM certificate (chain).
    public var certificateFile: String
    /// Path of the PEM private key.
    public var privateKeyFile: String
    /// The key's passphrase, if it is encrypted. Never printed.
    public var privateKeyPassword: String?

    /// Creates a client certificate.
    public init(certificateFile: String, privateKeyFile: String, privateKeyPassword: String? = nil) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.privateKeyPassword = privateKeyPassword
    }

    public var description: String {
        "ClientCertificate(\(certificateFile), key: \(privateKeyFile)\(privateKeyPassword == nil ? "" : ", password: <redacted>"))"
    }
}
