import CourierServices
import Foundation
import Synchronization
import Testing

/// A transport written outside Courier, as an app that puts its own network stack under the
/// coordinator would write one: `send` for whole responses, `stream` for bodies that arrive in
/// chunks, each chunk produced only when the reader asks for it.
final class CountingChunkTransport: HTTPTransport {
    /// Chunks handed to a reader, and bodies stopped by their reader.
    let produced = Atomic<Int>(0)
    let stopped = Atomic<Int>(0)
    let chunks: Int

    init(chunks: Int) { self.chunks = chunks }

    func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> TransportResponse
    {
        TransportResponse(head: HTTPResponse(status: .ok), body: Data(repeating: 0x61, count: chunks * 4))
    }

    func stream(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
        -> StreamingTransportResponse
    {
        struct Chunks: AsyncSequence, Sendable {
            let transport: CountingChunkTransport
            func makeAsyncIterator() -> Iterator { Iterator(transport: transport) }
            struct Iterator: AsyncIteratorProtocol {
                let transport: CountingChunkTransport
                var index = 0
                mutating func next() async throws -> Data? {
                    // A stopped body fails its next read, as a transport's does.
                    if transport.stopped.load(ordering: .relaxed) > 0 { throw ServiceError(.cancelled) }
                    guard index < transport.chunks else { return nil }
                    index += 1
                    transport.produced.add(1, ordering: .relaxed)
                    return Data("[\(index)]".utf8)
                }
            }
        }
        var head = HTTPResponse(status: .ok)
        head.headerFields[.contentType] = "application/octet-stream"
        let body = TransportBody(Chunks(transport: self)) { self.stopped.add(1, ordering: .relaxed) }
        return StreamingTransportResponse(head: head, body: body)
    }
}

@Suite("A transport of one's own")
struct CustomTransportTests {
    struct Feed: Resource {
        typealias Response = Data
        var endpoint: Endpoint { Endpoint("https://feed.example.com", path: "/chunks") }
    }

    @Test("a stream reads the transport's chunks as they come, and a whole load gets its send")
    func streamsAndLoads() async throws {
        let transport = CountingChunkTransport(chunks: 3)
        let coordinator = RequestCoordinator(transport: transport)
        let streamed = try await coordinator.stream(Feed())
        #expect(streamed.response.status == .ok)
        #expect(transport.produced.load(ordering: .relaxed) == 0, "no chunk before the reader asks")
        var text = ""
        for try await chunk in streamed.body { text += String(decoding: chunk, as: UTF8.self) }
        #expect(text == "[1][2][3]")
        #expect(try await Feed().load(using: coordinator).count == 12)
        await coordinator.shutdown()
    }

    @Test("cancelling the body reaches the transport's stream, and the next read fails")
    func cancellingStops() async throws {
        let transport = CountingChunkTransport(chunks: 1_000)
        let coordinator = RequestCoordinator(transport: transport)
        let streamed = try await coordinator.stream(Feed())
        var iterator = streamed.body.makeAsyncIterator()
        #expect(try await iterator.next() != nil)
        streamed.body.cancel()
        #expect(transport.stopped.load(ordering: .relaxed) == 1)
        do {
            _ = try await iterator.next()
            Issue.record("a read after cancel() went on")
        } catch let error as ServiceError {
            #expect(error.code == .cancelled)
        }
        #expect(transport.produced.load(ordering: .relaxed) == 1)
        await coordinator.shutdown()
    }
}
