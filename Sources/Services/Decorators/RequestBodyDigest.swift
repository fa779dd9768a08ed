internal import FoundationEssentials

#if canImport(Glibc)
internal import Glibc
#endif

/// The SHA-256 digest of a request body's bytes, as ``SigningDecorator`` hands it to its signer.
public struct RequestBodyDigest: Sendable, Hashable {
    /// The 32-byte SHA-256 digest.
    public let bytes: [UInt8]
    /// How many bytes the body had.
    public let length: Int

    /// The digest as lower-case hexadecimal text.
    public var hex: String { SHA256.hex(bytes) }

    /// The digest of no body (the SHA-256 of zero bytes).
    public static let empty = RequestBodyDigest(bytes: SHA256.hash([UInt8]()), length: 0)

    init(bytes: [UInt8], length: Int) {
        self.bytes = bytes
        self.length = length
    }

    /// The digest of `body`'s bytes (``empty`` for `nil`). Files are read in 64 KiB chunks,
    /// never whole; a file that cannot be read throws `fileAccess`.
    public init(of body: RequestBody?) throws {
        var digest = SHA256()
        var length = 0
        if let body, body.streamed != nil {
            throw ServiceError(
                .invalidRequest,
                "A streamed request body cannot be digested before it is sent: sign it without its digest, or send bytes or a file."
            )
        }
        for segment in body?.segments ?? [] {
            switch segment {
            case .bytes(let data):
                digest.update(data)
                length += data.count
            case .file(let path):
                length += try Self.digestFile(at: path, into: &digest)
            }
        }
        self.init(bytes: digest.finalize(), length: length)
    }

    /// Adds the bytes of the file at `path` to `digest`; returns how many there were.
    private static func digestFile(at path: String, into digest: inout SHA256) throws -> Int {
        guard let file = fopen(path, "rb") else {
            throw ServiceError(.fileAccess, "The request body file \(path) could not be opened to sign it.")
        }
        defer { fclose(file) }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var total = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count > 0 {
                digest.update(chunk[..<count])
                total += count
            }
            if count < chunk.count {
                if ferror(file) != 0 {
                    throw ServiceError(.fileAccess, "The request body file \(path) could not be read to sign it.")
                }
                return total
            }
        }
    }
}
