import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback port could not be reserved (the failing call is named).
public struct LocalPortError: Error, CustomStringConvertible {
    public let call: String
    /// `errno` right after the call failed.
    public let errorNumber: Int32
    public init(_ call: String) {
        self.call = call
        errorNumber = errno
    }
    public var description: String { "could not reserve a loopback port: \(call) failed (errno \(errorNumber))" }
}

/// Loopback TCP ports.
public enum LocalPort {
    /// `count` distinct ports nobody listens on right now (all bound at once, then released).
    public static func free(_ count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        return try (0..<count).map { _ in
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw LocalPortError("socket()") }
            descriptors.append(descriptor)
            return try bindToFreePort(descriptor)
        }
    }

    /// Binds `descriptor` to 127.0.0.1 on a port the kernel picks, and returns the port.
    static func bindToFreePort(_ descriptor: Int32) throws -> Int {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw LocalPortError("bind(127.0.0.1:0)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A loopback port that refuses connections for as long as this value lives: a socket bound to
/// it that never listens. Unlike a port whose server was stopped, no other test's server can be
/// given it meanwhile (which made a "refused" test see `connectionClosed` from a stranger).
public final class RefusingPort: Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LocalPortError("socket()") }
        do {
            port = try LocalPort.bindToFreePort(descriptor)
        } catch {
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    /// `127.0.0.1:<port>`.
    public var authority: String { "127.0.0.1:\(port)" }
    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://\(authority)" }

    deinit { close(descriptor) }
}
