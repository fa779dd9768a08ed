import CourierTestServer
import CourierTransport
import Foundation
import Testing

@Suite struct ResponseFaultTests {
    static let faults: [(route: String, code: ServiceError.Code)] = [
        ("/conflicting-length", .malformedResponse),
        ("/two-locations", .malformedResponse),
        ("/bare-cr", .malformedResponse),
        ("/nul-header", .malformedResponse),
        ("/obs-fold", .malformedResponse),
        ("/unknown-transfer-coding?after=1", .malformedResponse),
        ("/huge-headers?kb=100", .headersTooLarge),
        ("/close-mid-body", .truncatedBody),
        ("/close-immediately", .connectionClosed),
        ("/close-mid-headers", .connectionClosed),
    ]

    @Test(arguments: faults)
    func eachFaultHasItsOwnTypedError(route: String, code: ServiceError.Code) async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request(route)) }
            #expect(error?.code == code, "\(route): \(String(describing: error))")
        }
    }

    @Test("a body in a transfer coding other than chunked is handed on as it came, with its Transfer-Encoding")
    func anUnknownTransferCodingIsHandedOn() async throws {
        try await withLoopback { server, transport in
            for (route, codings) in [
                ("/unknown-transfer-coding", "x-custom"), ("/unknown-transfer-coding?chunked=1", "x-custom, chunked"),
                ("/unknown-transfer-coding?twice=1", "chunked, Chunked"),
            ] {
                let response = try await transport.send(server.request(route))
                #expect(String(decoding: response.body, as: UTF8.self) == "hello", "\(route)")
                #expect(response.head.headerFields[.transferEncoding] == codings, "\(route)")
                let streamed = try await transport.stream(server.request(route))
                #expect(String(decoding: try await streamed.body.collect(), as: UTF8.self) == "hello", "\(route)")
            }
        }
    }

    @Test func repeatedIdenticalContentLengthsAreAccepted() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/duplicate-same-length"))
            #expect(String(decoding: response.body, as: UTF8.self) == "hello")
        }
    }

    @Test func aStallAfterTheHeadersTimesOut() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.timeout = .milliseconds(300)
            let error = await serviceError {
                _ = try await transport.send(server.request("/stall"), body: nil, options: options)
            }
            #expect(error?.code == .timedOut)
            #expect(error?.isRetryable == true)
        }
    }

    @Test func aLowSpeedLimitCatchesAStall() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 10, duration: .seconds(1))
            let error = await serviceError {
                _ = try await transport.send(server.request("/stall"), body: nil, options: options)
            }
            #expect(error?.code == .timedOut)
        }
    }

    @Test func aBodyOverTheLimitIsRefused() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = 10_000
            let error = await serviceError {
                _ = try await transport.send(server.request("/bytes?n=20000"), body: nil, options: options)
            }
            #expect(error?.code == .responseTooLarge)
            let streamed = await serviceError {
                _ = try await transport.send(server.request("/stream?count=30&size=1000"), body: nil, options: options)
            }
            #expect(streamed?.code == .responseTooLarge)
        }
    }

    @Test func aClosedPortCannotConnect() async throws {
        let refusing = try RefusingPort()  // bound, never listening: connections are refused
        let authority = refusing.authority
        defer { withExtendedLifetime(refusing) {} }
        let transport = CurlTransport()
        let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/json")
        let error = await serviceError { _ = try await transport.send(request) }
        #expect(error?.code == .cannotConnect)
        #expect(error?.isRetryable == true)
        #expect(error?.recoverySuggestion.isEmpty == false)
        await transport.shutdown()
    }

    @Test func anUnknownHostIsADNSError() async throws {
        let transport = CurlTransport()
        let request = HTTPRequest(method: .get, scheme: "http", authority: "no-such-host.invalid", path: "/")
        let error = await serviceError { _ = try await transport.send(request) }
        #expect(error?.code == .dnsFailed)
        await transport.shutdown()
    }
}
