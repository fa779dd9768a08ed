import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A reply that breaks HTTP is the server's fault: `load()` fails at once instead of sending
/// the request again.
@Suite struct FaultRetryTests {
    struct Route: Resource {
        typealias Response = Data
        let base: String
        let path: String
        var endpoint: Endpoint { Endpoint(base, path: path) }
    }

    @Test(arguments: [
        ("/bad-chunk-size", ServiceError.Code.malformedResponse),
        ("/overflowing-chunk-size", .malformedResponse),
        ("/garbage-status", .malformedResponse),
        ("/giant-header-line", .headersTooLarge),
    ])
    func aBrokenReplyIsSentOnce(path: String, code: ServiceError.Code) async throws {
        try await withCoordinator { server, coordinator in
            let before = server.snapshot.requestCount
            let error = await serviceError { _ = try await Route(base: server.baseURL, path: path).load(using: coordinator) }
            #expect(error?.code == code)
            #expect(server.snapshot.requestCount - before == 1)
        }
    }
}
