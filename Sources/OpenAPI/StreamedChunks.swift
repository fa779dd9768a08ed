internal import CourierServices
internal import Foundation
internal import HTTPTypes
internal import OpenAPIRuntime

/// A response body streamed by the coordinator, handed to the runtime chunk by chunk as it
/// arrives: never held whole. Read once; dropping its iterator (the generated client or its
/// caller letting the body go) stops the transfer.
struct StreamedChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk

    let chunks: TransportBody

    /// The body of `load`, of known length when the server declared one for the bytes as
    /// delivered: a `Content-Length`, and neither a `Content-Encoding` (which Courier may
    /// decode) nor a `Transfer-Encoding` (whose body's end is not that length).
    static func body(_ load: StreamedLoad) -> HTTPBody {
        var length = HTTPBody.Length.unknown
        if load.response.headerFields[.contentEncoding] == nil, load.response.headerFields[.transferEncoding] == nil,
            let declared = load.response.headerFields[.contentLength].flatMap({ Int64($0) }), declared >= 0
        {
            length = .known(declared)
        }
        return HTTPBody(StreamedChunks(chunks: load.body), length: length, iterationBehavior: .single)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: TransportBody.Iterator

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            guard let chunk = try await base.next() else { return nil }
            return chunk.withUnsafeBytes { ArraySlice($0) }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: chunks.makeAsyncIterator()) }
}
