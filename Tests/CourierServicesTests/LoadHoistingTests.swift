import CourierCore
import CourierServices
import Foundation
import HTTPTypes
import Testing

@testable import CourierServices

/// The per-load work `load()` does once: the request validated once (the transport is told),
/// and an endpoint split into request parts by scanning its UTF-8 bytes.
@Suite("load() per-load work")
struct LoadHoistingTests {
    /// Records the options of every send and answers 200.
    final class OptionsRecorder: HTTPTransport {
        let options = LockedValue<[TransferOptions]>([])

        func send(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
            -> TransportResponse
        {
            self.options.withLock { $0.append(options) }
            return TransportResponse(head: HTTPResponse(status: .ok), body: Data("{}".utf8))
        }

        func stream(_ request: HTTPRequest, body: RequestBody?, options: TransferOptions) async throws
            -> StreamingTransportResponse
        {
            self.options.withLock { $0.append(options) }
            return StreamingTransportResponse(
                head: HTTPResponse(status: .ok), metrics: TransferMetrics(), body: .bytes(Data()))
        }
    }

    struct Plain: Resource {
        typealias Response = Data
        var endpoint: Endpoint { Endpoint("http://hoist.test", path: "/a") }
    }

    @Test("a load tells the transport its request was validated; a bare transport call does not")
    func validatedOnce() async throws {
        let recorder = OptionsRecorder()
        let coordinator = RequestCoordinator(transport: recorder)
        _ = try await Plain().load(using: coordinator)
        _ = try await recorder.send(HTTPRequest(method: .get, scheme: "http", authority: "hoist.test", path: "/b"))
        let seen = recorder.options.withLock { $0.map(\.requestIsValidated) }
        #expect(seen == [true, false])
    }

    @Test("scheme in any case, trailing slashes, paths with and without a leading slash")
    func components() throws {
        let parts = try Endpoint("HTTPS://Example.COM:8443/v1//", path: "users").components()
        #expect(parts.scheme == "https")
        #expect(parts.authority == "Example.COM:8443")
        #expect(parts.path == "/v1/users")
        #expect(try Endpoint("Http://h", path: "/x").components().path == "/x")
        #expect(try Endpoint("http://h/").components().path == "/")
        #expect(try Endpoint("http://bücher.example/ä", path: "ö ü").components().authority == "bücher.example")
        #expect(try Endpoint("http://bücher.example/ä", path: "ö ü").components().path == "/%C3%A4/%C3%B6%20%C3%BC")
    }

    @Test("query items keep their order, empty names and valueless items")
    func query() throws {
        let items = [
            URLQueryItem(name: "", value: nil), URLQueryItem(name: "a b", value: "1&2"),
            URLQueryItem(name: "f", value: nil),
        ]
        #expect(try Endpoint("http://h", path: "/q", query: items).components().path == "/q?&a%20b=1%262&f")
        #expect(
            try Endpoint("http://h", path: "/q", query: [URLQueryItem(name: "", value: "")]).components().path == "/q?="
        )
    }

    @Test("bad base URLs fail with invalidRequest, whatever the case of the scheme")
    func badBases() {
        for base in [
            "ftp://h", "httpx://h", "htt://h", "HTTP://", "http:///p", "no-scheme", "http://h/p?q=1", "", "http:",
            "http:/h", "://h", "http://h#top", "http://h/p#top", "http://?q", "x http://h",
        ] {
            #expect(throws: ServiceError.self, "\(base)") { try Endpoint(base, path: "/x").components() }
        }
    }
}
