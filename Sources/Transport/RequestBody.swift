public import FoundationEssentials

/// The body of a request: bytes in memory, or a file streamed from disk (never loaded whole).
public struct RequestBody: Sendable {
    enum Storage: Sendable {
        case bytes(Data)
        case file(path: String)
    }

    let storage: Storage

    /// A body from bytes in memory.
    public static func bytes(_ data: Data) -> RequestBody { RequestBody(storage: .bytes(data)) }

    /// A body from bytes in memory.
    public static func bytes(_ bytes: some Sequence<UInt8>) -> RequestBody { .bytes(Data(bytes)) }

    /// A body from a UTF-8 string.
    public static func string(_ text: String) -> RequestBody { .bytes(Data(text.utf8)) }

    /// A body read from the file at `path` as it is sent. The file's size at send time is the
    /// `Content-Length`; a file that cannot be opened fails the request with `fileAccess`.
    public static func file(atPath path: String) -> RequestBody { RequestBody(storage: .file(path: path)) }

    /// The size in bytes, when it is known without touching the disk.
    public var knownLength: Int? {
        if case .bytes(let data) = storage { return data.count }
        return nil
    }
}
