import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// `maximumBodySize` limits bodies that come, not lengths announced for bodies that cannot come:
/// a HEAD of a large file tells its size (curl's CURLOPT_MAXFILESIZE, used before, failed it).
@Suite struct MaximumBodySizeTests {
    static let large = 100 << 20

    @Test func aHeadOfALargeResourceSucceedsUnderTheDefaultLimit() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(
                server.request("/announce?length=\(Self.large)", method: .head), body: nil, options: TransferOptions())
            #expect(response.head.status.code == 200)
            #expect(response.head.headerFields[.contentLength] == "\(Self.large)")
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: [204, 304])
    func aBodilessStatusMayAnnounceAnyLength(status: Int) async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(
                server.request("/announce?length=\(Self.large)&status=\(status)"), body: nil, options: TransferOptions()
            )
            #expect(response.head.status.code == status)
            #expect(response.body.isEmpty)
        }
    }

    @Test func aGetOverTheLimitStillFailsBeforeItsBody() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError {
                _ = try await transport.send(
                    server.request("/announce?length=\(Self.large)"), body: nil, options: TransferOptions())
            }
            #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
            #expect(error?.isRetryable == false)
        }
    }

    @Test func aStreamedGetOverTheLimitFailsToo() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError {
                let streamed = try await transport.stream(
                    server.request("/announce?length=\(Self.large)"), body: nil, options: TransferOptions())
                for try await _ in streamed.body {}
            }
            #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
        }
    }

    @Test func aHeadUnderALimitOfItsOwnSucceedsToo() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = 1024
            let response = try await transport.send(
                server.request("/announce?length=\(Self.large)", method: .head), body: nil, options: options)
            #expect(response.head.status.code == 200)
        }
    }
}
