/// What one transfer cost, from curl's own timers (each measured from the start of the
/// final hop) and counters.
public struct TransferMetrics: Sendable, Hashable {
    /// Time until the host name was resolved.
    public var nameLookup: Duration = .zero
    /// Time until the TCP connection was established.
    public var connect: Duration = .zero
    /// Time until the TLS handshake completed (zero for cleartext).
    public var tlsHandshake: Duration = .zero
    /// Time until the first response byte arrived.
    public var firstByte: Duration = .zero
    /// Time for the whole final hop.
    public var total: Duration = .zero
    /// Redirects followed before the final response.
    public var redirectCount = 0
    /// Bytes of body received on the wire (compressed size when the body was compressed).
    public var bytesReceived: Int64 = 0
    /// Bytes of body sent.
    public var bytesSent: Int64 = 0
    /// New connections this transfer opened (`CURLINFO_NUM_CONNECTS`): 0 when it reused one,
    /// kept alive (HTTP/1.1) or multiplexed (HTTP/2). Summed over transfers, it counts the
    /// connections they opened, those made to retry streams a server refused after a
    /// `GOAWAY` included.
    public var newConnections = 0
    /// The HTTP version of the response (`CURLINFO_HTTP_VERSION`): "1.0", "1.1", "2" or "3".
    /// Over https, "2" when the server offered h2 by ALPN (``TransferOptions/httpVersion``).
    public var httpVersion = ""
    /// The content codings the transport decoded, as the `Content-Encoding` value it removed
    /// from the head ("gzip", "deflate, gzip"; `x-gzip` reads "gzip"): empty when the body
    /// arrived as sent (identity, or ``TransferOptions/decompressesResponses`` off, which
    /// leaves `Content-Encoding` in the head), and for a response from the cache, which stores
    /// decoded bodies.
    public var decodedContentEncoding = ""
    /// The local port of the connection, useful to see connection reuse: transfers
    /// multiplexed on one HTTP/2 connection share it.
    public var localPort = 0

    /// Creates empty metrics.
    public init() {}
}
