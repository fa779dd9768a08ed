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
            let error = await serviceError {
                _ = try await Route(base: server.baseURL, path: path).load(using: coordinator)
            }
            #expect(error?.code == code)
            #expect(server.snapshot.requestCount - before == 1)
        }
    }
}

/// A stalled upstream never holds a load forever: the idle limit ends it, per resource or
/// from the coordinator's transfer options.
@Suite struct StalledLoadTests {
    struct Stalled: Resource {
        typealias Response = Data
        let base: String
        var idle: Duration?
        var endpoint: Endpoint { Endpoint(base, path: "/stall-after-head") }
        var idleTimeout: Duration? { idle }
        var retryPolicy: RetryPolicy? { RetryPolicy.none }
    }

    @Test func aResourceSetsItsOwnIdleLimit() async throws {
        try await withCoordinator { server, coordinator in
            let error = await serviceError {
                _ = try await Stalled(base: server.baseURL, idle: .seconds(1)).load(using: coordinator)
            }
            #expect(error?.code == .timedOut)
        }
    }

    @Test func theCoordinatorsTransferOptionsApplyOtherwise() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.transferOptions.idleTimeout = .seconds(1)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let error = await serviceError { _ = try await Stalled(base: server.baseURL).load(using: coordinator) }
            #expect(error?.code == .timedOut)
        }
    }
}
