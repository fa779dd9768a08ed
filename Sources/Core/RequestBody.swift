public import FoundationEssentials

/// The body of a request: bytes in memory, a file streamed from disk (never loaded whole),
/// a sequence of both (how multipart forms stream their files), or the chunks of an
/// `AsyncSequence` produced while the request is sent (``stream(_:length:contentType:trailers:)``).
public struct RequestBody: Sendable {
    /// One piece of a body.
    package enum Segment: Sendable {
        /// Bytes in memory.
        case bytes(Data)
        /// The whole file at a path, read as it is sent.
        case file(path: String)
    }

    package enum Storage: Sendable {
        case bytes(Data)
        case file(path: String)
        case segments([Segment])
        /// Chunks produced while the body is sent, read once.
        case stream(StreamedBody)
    }

    package let storage: Storage

    /// The media type sent as `Content-Type` when the request does not set one itself
    /// (set by the body builders of `CourierServices`: JSON, forms, multipart).
    public var contentType: String?

    package init(storage: Storage, contentType: String? = nil) {
        self.storage = storage
        self.contentType = contentType
    }

    /// A body from bytes in memory.
    public static func bytes(_ data: Data, contentType: String? = nil) -> RequestBody {
        RequestBody(storage: .bytes(data), contentType: contentType)
    }

    /// A body from bytes in memory.
    public static func bytes(_ bytes: some Sequence<UInt8>, contentType: String? = nil) -> RequestBody {
        .bytes(Data(bytes), contentType: contentType)
    }

    /// A body from a UTF-8 string.
    public static func string(_ text: String, contentType: String? = nil) -> RequestBody {
        .bytes(Data(text.utf8), contentType: contentType)
    }

    /// A body read from the file at `path` as it is sent. The file's size at send time is the
    /// `Content-Length`; a file that cannot be opened fails the request with `fileAccess`.
    public static func file(atPath path: String, contentType: String? = nil) -> RequestBody {
        RequestBody(storage: .file(path: path), contentType: contentType)
    }

    /// A body sent as the concatenation of `segments`, files read as they are sent.
    package static func segments(_ segments: [Segment], contentType: String? = nil) -> RequestBody {
        RequestBody(storage: .segments(segments), contentType: contentType)
    }

    /// The size in bytes, when it is known without touching the disk or reading a stream.
    package var knownLength: Int? {
        switch storage {
        case .bytes(let data): return data.count
        case .file: return nil
        case .stream(let stream): return stream.length
        case .segments(let segments):
            var total = 0
            for segment in segments {
                guard case .bytes(let data) = segment else { return nil }
                total += data.count
            }
            return total
        }
    }

    /// The bytes, when the whole body is in memory (no file segment, not a stream).
    package var inMemoryBytes: Data? {
        switch storage {
        case .bytes(let data): return data
        case .file, .stream: return nil
        case .segments(let segments):
            var joined = Data()
            for segment in segments {
                guard case .bytes(let data) = segment else { return nil }
                joined.append(data)
            }
            return joined
        }
    }

    /// The pieces of this body in order; `nil` for a stream, whose pieces are not known
    /// before it is sent.
    package var segments: [Segment]? {
        switch storage {
        case .bytes(let data): [.bytes(data)]
        case .file(let path): [.file(path: path)]
        case .segments(let segments): segments
        case .stream: nil
        }
    }

    /// Whether every byte is held in memory (no file, no stream): such a body takes no longer
    /// to send than its size over the connection.
    package var isInMemory: Bool {
        switch storage {
        case .bytes: true
        case .file, .stream: false
        case .segments(let segments):
            segments.allSatisfy { segment in
                if case .bytes = segment { true } else { false }
            }
        }
    }

    /// The streamed body's chunks, for a body made by ``stream(_:length:contentType:trailers:)``.
    package var streamed: StreamedBody? {
        if case .stream(let stream) = storage { stream } else { nil }
    }
}
