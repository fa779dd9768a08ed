#if canImport(Glibc)
internal import Glibc
#endif

/// Addresses to connect to for one host name and port, used instead of asking DNS: a name
/// pinned to the pods of a Kubernetes headless service, the new side of a blue/green
/// cut-over, or a test server under a production name. Set on
/// ``CurlTransport/Configuration/addressOverrides``.
///
/// The request keeps its name: `Host` (or `:authority`), TLS server-name indication and
/// certificate verification all use `host`, so an override for an HTTPS host needs a server
/// whose certificate is valid for that name.
///
/// ```swift
/// var configuration = CurlTransport.Configuration()
/// configuration.addressOverrides = [
///     try AddressOverride(host: "api.example.com", port: 443, addresses: ["10.0.0.7", "10.0.0.8"])
/// ]
/// let transport = CurlTransport(configuration: configuration)
/// ```
public struct AddressOverride: Sendable, Hashable {
    /// The host name as requests spell it (compared without regard to case).
    public let host: String
    /// The port requests use: 443 for `https` and 80 for `http` unless the URL names one.
    public let port: Int
    /// IPv4 or IPv6 addresses (IPv6 without brackets), tried in this order unless
    /// ``CurlTransport/Configuration/shufflesAddresses`` is set.
    public let addresses: [String]

    /// Creates an override.
    ///
    /// libcurl would skip a malformed entry without a word and ask DNS instead, so every part
    /// is checked here.
    ///
    /// - Throws: `ServiceError` with code `invalidRequest` when `host` is empty, longer than 255
    ///   bytes or holds a colon, comma, space or control character; when `port` is outside
    ///   1...65535; or when `addresses` is empty or one of them is not an IP address.
    public init(host: String, port: Int, addresses: [String]) throws(ServiceError) {
        let hostIsValid =
            !host.isEmpty && host.utf8.count < 256
            && host.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: ",") }
        guard hostIsValid else {
            throw ServiceError(.invalidRequest, "An address override's host '\(host)' is not a host name.")
        }
        guard (1...65_535).contains(port) else {
            throw ServiceError(.invalidRequest, "An address override's port \(port) is outside 1...65535.")
        }
        guard !addresses.isEmpty else {
            throw ServiceError(.invalidRequest, "The address override for \(host):\(port) lists no address.")
        }
        for address in addresses where IPAddressText.family(of: address) == nil {
            throw ServiceError(
                .invalidRequest, "The address override for \(host):\(port) lists '\(address)', not an IP address.")
        }
        self.host = host
        self.port = port
        self.addresses = addresses
    }

    /// The entry as `CURLOPT_RESOLVE` takes it: `host:port:address,[v6address]`.
    var curlEntry: String {
        let list = addresses.map { IPAddressText.family(of: $0) == AF_INET6 ? "[\($0)]" : $0 }
        return "\(host):\(port):" + list.joined(separator: ",")
    }
}

/// Where the transport's connections start from: a local address or a network interface.
/// Set on ``CurlTransport/Configuration/localBinding``.
public struct LocalBinding: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Hashable {
        case address(String)
        case interface(String)
    }

    let kind: Kind

    /// Binds each connection's socket to this local IP address (or host name that resolves
    /// to one), so that it leaves from it: one of several addresses of the machine, or the
    /// address a firewall or the upstream's allow-list expects.
    public static func address(_ address: String) -> LocalBinding { LocalBinding(kind: .address(address)) }

    /// Binds each connection to this network interface (`eth1`), leaving from the
    /// interface's address.
    public static func interface(_ name: String) -> LocalBinding { LocalBinding(kind: .interface(name)) }

    /// `address 10.0.0.5` or `interface eth1`.
    public var description: String {
        switch kind {
        case .address(let address): "address \(address)"
        case .interface(let name): "interface \(name)"
        }
    }

    /// The value as `CURLOPT_INTERFACE` takes it, with the prefix that stops curl from guessing.
    var curlValue: String {
        switch kind {
        case .address(let address): "host!" + address
        case .interface(let name): "if!" + name
        }
    }
}

/// IP addresses as text.
enum IPAddressText {
    /// `AF_INET` or `AF_INET6` when `text` is an address of that family, `nil` otherwise.
    static func family(of text: String) -> Int32? {
        var buffer = (UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &buffer) { storage in
            if inet_pton(AF_INET, text, storage.baseAddress) == 1 { return AF_INET }
            if inet_pton(AF_INET6, text, storage.baseAddress) == 1 { return AF_INET6 }
            return nil
        }
    }
}
