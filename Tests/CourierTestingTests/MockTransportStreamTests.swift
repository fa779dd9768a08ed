import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// MockTransport with streamed request bodies and response trailers, as `CurlTransport` treats them.
@Suite struct MockTransportStreamTests {
    let request = HTTPRequest(method: .post, scheme: "https", authority: "api.example", path: "/upload")

    @Test func aStreamedBodyIsReadWholeAndRecordedWithItsTrailers() async throws {
        let mock = MockTransport()
        mock.respond(to: .post, "/upload", with: .status(.created))
        let chunks = AsyncStream<Data> { continuation in
            for part in ["a", "bc", "def"] { continuation.yield(Data(part.utf8)) }
            continuation.finish()
        }
        let body = RequestBody.stream(chunks) { [HTTPField.Name("Digest")!: "crc32=1"] }
        let response = try await mock.send(request, body: body, options: TransferOptions())
        #expect(response.head.status == .created)
        #expect(mock.requests.first?.body == Data("abcdef".utf8))
        #expect(mock.requests.first?.trailers[HTTPField.Name("Digest")!] == "crc32=1")
        // A stream is read once, as on the wire.
        let error = await #expect(throws: ServiceError.self) {
            _ = try await mock.send(request, body: body, options: TransferOptions())
        }
        #expect(error?.code == .bodyNotReplayable)
    }

    @Test func aStreamThatThrowsFailsTheRequestAsTheTransportWould() async throws {
        struct Broken: Error {}
        let mock = MockTransport()
        mock.respond(to: .post, "/upload", with: .status(.created))
        let chunks = AsyncThrowingStream<Data, any Error> { $0.finish(throwing: Broken()) }
        let error = await #expect(throws: ServiceError.self) {
            _ = try await mock.send(request, body: .stream(chunks), options: TransferOptions())
        }
        #expect(error?.code == .requestBodyFailed)
        let forbidden = RequestBody.stream(AsyncStream<Data> { $0.finish() }) { [.contentLength: "0"] }
        let refused = await #expect(throws: ServiceError.self) {
            _ = try await mock.send(request, body: forbidden, options: TransferOptions())
        }
        #expect(refused?.code == .invalidRequest)
    }

    @Test func aReplyCarriesTrailersShownAfterTheBodyEnds() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/export", with: .json("[]").withTrailers([.eTag: "\"v2\""]))
        let get = HTTPRequest(method: .get, scheme: "https", authority: "api.example", path: "/export")
        let whole = try await mock.send(get, body: nil, options: TransferOptions())
        #expect(whole.trailers[.eTag] == "\"v2\"")
        let streamed = try await mock.stream(get, body: nil, options: TransferOptions())
        #expect(streamed.body.trailers == nil)
        #expect(try await streamed.body.collect() == Data("[]".utf8))
        #expect(streamed.body.trailers?[.eTag] == "\"v2\"")
    }
}
