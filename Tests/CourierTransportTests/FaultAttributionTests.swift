import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// Each fault a server can commit comes back with the code that names the server, never one
/// that tells the caller to fix their request or one that invites a retry of a broken reply.
@Suite struct FaultAttributionTests {
    static let faults: [(route: String, code: ServiceError.Code)] = [
        ("/garbage-status", .malformedResponse),
        ("/http09", .malformedResponse),
        ("/giant-header-line?kb=200", .headersTooLarge),
        ("/bad-chunk-size", .malformedResponse),
        ("/overflowing-chunk-size", .malformedResponse),
        ("/redirect-file", .redirectRefused),
    ]

    @Test(arguments: faults)
    func theServerIsBlamed(route: String, code: ServiceError.Code) async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request(route)) }
            #expect(error?.code == code, "\(route): \(String(describing: error))")
            #expect(error?.isRetryable == false, "\(route) must not be retried")
        }
    }

    @Test func moreFieldsThanHTTPTypesHoldsIsHeadersTooLargeNotATrap() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumHeaderSize = 4 << 20
            // 40,000 fields stay under curl's 300 KiB; more than Courier reads into HTTPFields.
            let error = await serviceError {
                _ = try await transport.send(server.request("/many-headers?n=40000"), body: nil, options: options)
            }
            #expect(error?.code == .headersTooLarge, "\(String(describing: error))")
            // 70,000 pass curl's own total limit (300 KiB), which is headersTooLarge as well.
            let overCurls = await serviceError {
                _ = try await transport.send(server.request("/many-headers?n=70000"), body: nil, options: options)
            }
            #expect(overCurls?.code == .headersTooLarge, "\(String(describing: overCurls))")
        }
    }

    @Test func aRedirectToAnotherSchemeIsRefusedWithoutFollowingIt() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError {
                _ = try await transport.send(server.request("/redirect-to?to=ftp://127.0.0.1/secret"))
            }
            #expect(error?.code == .redirectRefused)
            #expect(error?.status == .found)
        }
    }
}
