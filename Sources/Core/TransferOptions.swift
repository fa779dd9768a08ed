public import Logging

/// Per-transfer settings. Every property has a production default.
///
/// The values live in one shared box, copied on write: options are copied at each layer a
/// request passes (the coordinator's configuration, the load's plan, the transfer), and a copy
/// is then one retain rather than one per field (a load made four, some 1,500 instructions).
public struct TransferOptions: Sendable {
    /// The stored values.
    private struct Values: Sendable {
        var connectTimeout: Duration? = .seconds(10)
        var timeout: Duration?
        var idleTimeout: Duration? = .seconds(60)
        var lowSpeedLimit: LowSpeedLimit?
        var redirects: RedirectPolicy = .default
        var tls: TLSOptions = TLSOptions()
        var proxy: ProxyOptions = .none
        var unixSocketPath: String?
        var maximumBodySize: Int? = 64 << 20
        var maximumHeaderSize: Int = 64 << 10
        var decompressesResponses: Bool = true
        var httpVersion: HTTPVersionPreference = .automatic
        var progress: ProgressReporter?
        var logger: Logger?
        var requestIsValidated: Bool = false
        var cancellation: TransferCancellation?
        var deadline: Moment?
    }

    /// Invariant that makes it Sendable: `values` is written only through `update`, which first
    /// copies a box that another `TransferOptions` shares, so a box that another value or thread
    /// can see is never written.
    private final class Storage: @unchecked Sendable {
        var values: Values
        init(_ values: Values) { self.values = values }
    }

    private var storage: Storage

    private mutating func update(_ change: (inout Values) -> Void) {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values) }
        change(&storage.values)
    }

    /// Time allowed to establish the connection (TCP and TLS). 10 seconds by default.
    public var connectTimeout: Duration? {
        get { storage.values.connectTimeout }
        set { update { $0.connectTimeout = newValue } }
    }
    /// Time allowed for the whole transfer, redirects excluded, counted from when it is sent:
    /// time spent waiting for a free connection (behind the transport's connection limits)
    /// counts. `nil` (no limit) by default.
    public var timeout: Duration? {
        get { storage.values.timeout }
        set { update { $0.timeout = newValue } }
    }
    /// Longest time without a byte in either direction, once connected, before the transfer
    /// fails with `timedOut`: a server that stalls before its head, after it, mid-body, or
    /// while (or after) it reads the request body. 60 seconds by default (as `URLSession`'s
    /// request timeout); `nil` removes the limit; at least 1 ms. A streamed body paused because
    /// its consumer lags is not idle, and neither is a connection still being set up (that is
    /// ``connectTimeout``'s).
    ///
    /// The transport checks it itself, from the last byte curl moved: a stall ends the transfer
    /// within a few milliseconds past the limit. While request bytes may still wait in the
    /// socket's send buffer, their progress is sampled every quarter of the limit, so a stall
    /// then ends within a quarter of the limit of it.
    public var idleTimeout: Duration? {
        get { storage.values.idleTimeout }
        set { update { $0.idleTimeout = newValue } }
    }
    /// Abort when the transfer is slower than this for this long (curl's low-speed check,
    /// which averages the speed over the last few seconds; whole seconds, rounded up). `nil` by
    /// default. Independent of ``idleTimeout``: both apply when both are set.
    public var lowSpeedLimit: LowSpeedLimit? {
        get { storage.values.lowSpeedLimit }
        set { update { $0.lowSpeedLimit = newValue } }
    }
    /// Which redirects to follow. ``RedirectPolicy/default`` by default.
    public var redirects: RedirectPolicy {
        get { storage.values.redirects }
        set { update { $0.redirects = newValue } }
    }
    /// Certificate verification, custom CAs, pinning and client certificates.
    public var tls: TLSOptions {
        get { storage.values.tls }
        set { update { $0.tls = newValue } }
    }
    /// Proxy use. ``ProxyOptions/none`` by default: environment variables are ignored.
    public var proxy: ProxyOptions {
        get { storage.values.proxy }
        set { update { $0.proxy = newValue } }
    }
    /// Connect through this Unix-domain socket instead of TCP. `nil` by default.
    public var unixSocketPath: String? {
        get { storage.values.unixSocketPath }
        set { update { $0.unixSocketPath = newValue } }
    }
    /// Largest body accepted, counted both on the wire and after inflating (a guard
    /// against decompression bombs). 64 MiB by default; `nil` removes the limit, which
    /// suits `CurlTransport.download(_:body:to:options:)` of large files.
    public var maximumBodySize: Int? {
        get { storage.values.maximumBodySize }
        set { update { $0.maximumBodySize = newValue } }
    }
    /// Largest response header block accepted. 64 KiB by default.
    public var maximumHeaderSize: Int {
        get { storage.values.maximumHeaderSize }
        set { update { $0.maximumHeaderSize = newValue } }
    }
    /// Whether Courier asks for and decodes gzip, deflate, brotli (`br`) and zstd bodies.
    /// `true` by default. When `false`, no `Accept-Encoding` is added and bodies are delivered
    /// as received.
    public var decompressesResponses: Bool {
        get { storage.values.decompressesResponses }
        set { update { $0.decompressesResponses = newValue } }
    }
    /// Which HTTP version to negotiate. ``HTTPVersionPreference/automatic`` by default.
    public var httpVersion: HTTPVersionPreference {
        get { storage.values.httpVersion }
        set { update { $0.httpVersion = newValue } }
    }
    /// Receives upload and download progress. `nil` by default.
    public var progress: ProgressReporter? {
        get { storage.values.progress }
        set { update { $0.progress = newValue } }
    }
    /// The logger of the request this transfer serves: the transport writes its `.trace` and
    /// `.debug` lines for the transfer here (redirects followed, a hop that failed), with the
    /// logger's metadata, so they carry the caller's `courier.request.id`. Never anything at
    /// `.info` or above. `nil` (the transport's background logger, if any) by default; the
    /// coordinator sets it to the load's logger. Not part of a request's identity: loads that
    /// share one transfer log it to the logger of the load that started it.
    public var logger: Logger? {
        get { storage.values.logger }
        set { update { $0.logger = newValue } }
    }
    /// Set by a caller that already checked the request with ``RequestValidation/validate(_:)``
    /// (the coordinator, once per load), so the transport does not check it again.
    package var requestIsValidated: Bool {
        get { storage.values.requestIsValidated }
        set { update { $0.requestIsValidated = newValue } }
    }
    /// Cancels the transfer from outside its task (see ``TransferCancellation``); honoured by
    /// transports that conform to ``HonoursTransferCancellation``. `nil` by default.
    package var cancellation: TransferCancellation? {
        get { storage.values.cancellation }
        set { update { $0.cancellation = newValue } }
    }
    /// When the load this transfer serves must end (``RequestCoordinator``'s deadline and load
    /// budget): the transfer ends with `timedOut` then, as with ``timeout``, whichever comes
    /// first; one that waits for a connection past it fails without being sent. `nil` by default.
    package var deadline: Moment? {
        get { storage.values.deadline }
        set { update { $0.deadline = newValue } }
    }

    /// Creates default options: one box shared by every default value until one is changed.
    public init() { storage = Self.defaults }

    private static let defaults = Storage(Values())
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
    ///
    /// With a libcurl older than 8.0.0 (Debian 12 has 7.88.1), a cleartext connection with
    /// prior knowledge cannot be reused (curl bug #10634: the second request on it fails in
    /// the framing layer), so each such request opens a connection of its own and closes it
    /// after. Over TLS, and with libcurl 8.0.0 and later, connections are reused and multiplexed.
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
    /// Whether the server must staple a valid OCSP response for its certificate (TLS
    /// certificate status request): without one, or with a response that says "revoked", the
    /// connection fails with `tlsFailed`. The server must send its certificate's issuer in its
    /// chain. `false` by default.
    public var requiresOCSPStapling = false
    /// A PEM file of certificate revocation lists: a server certificate listed there as
    /// revoked fails the connection with `tlsFailed`. With OpenSSL, only the server's own
    /// certificate is checked, and the list must come from the authority that issued it. A
    /// file that cannot be read fails every connection with `tlsFailed`. `nil` by default.
    public var certificateRevocationListFile: String?

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
