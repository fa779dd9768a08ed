internal import Foundation
internal import OpenAPIRuntime

/// A response body the coordinator delivered whole, handed to the runtime in chunks, so that a
/// large download is not copied whole a second time (`HTTPBody(Data)` would copy it into one
/// `ArraySlice`): at most one chunk is copied at a time. It can be read any number of times.
struct DataChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk

    /// 64 KiB: large enough that a chunk costs little, small enough to stay in cache.
    static let chunkSize = 64 << 10

    let data: Data
    var chunkSize = DataChunks.chunkSize

    /// The whole of `data` as a body of known length.
    static func body(_ data: Data) -> HTTPBody {
        HTTPBody(DataChunks(data: data), length: .known(Int64(data.count)), iterationBehavior: .multiple)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let data: Data
        let chunkSize: Int
        var offset: Int

        mutating func next() async -> HTTPBody.ByteChunk? {
            guard offset < data.endIndex else { return nil }
            let end = Swift.min(offset + chunkSize, data.endIndex)
            defer { offset = end }
            return data[offset..<end].withUnsafeBytes { ArraySlice($0) }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(data: data, chunkSize: Swift.max(1, chunkSize), offset: data.startIndex)
    }
}
