import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

@Suite struct StreamingTests {
    @Test func chunksArriveAsTheServerSendsThem() async throws {
        try await withLoopback { server, transport in
            let streamed = try await transport.stream(server.request("/stream?count=5&size=10&delayMs=20"))
            #expect(streamed.head.status == .ok)
            var received: [UInt8] = []
            var chunks = 0
            for try await chunk in streamed.body {
                received += chunk
                chunks += 1
            }
            #expect(received == (0..<50).map(Payloads.patternByte(at:)))
            #expect(chunks >= 2)
        }
    }

    @Test func aSlowConsumerPausesTheTransferInsteadOfBuffering() async throws {
        var configuration = CurlTransport.Configuration()
        configuration.streamBufferSize = 64 << 10
        try await withLoopback(configuration: configuration) { server, transport in
            var options = TransferOptions()
            options.maximumBodySize = nil
            let streamed = try await transport.streamResponse(server.request("/bytes?n=\(8 << 20)"), options: options)
            var total = 0
            var iterations = 0
            for try await chunk in streamed.body {
                total += chunk.count
                iterations += 1
                if iterations % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
            #expect(total == 8 << 20)
            #expect(streamed.body.bufferedHighWaterMark <= (64 << 10) + (64 << 10))
        }
    }

    @Test func leavingTheLoopEarlyStopsTheTransfer() async throws {
        try await withLoopback { server, transport in
            // A body that cannot end on its own (a million chunks 5 ms apart): a transfer that
            // finished would leave its connection open in the pool, and prove nothing.
            let streamed = try await transport.stream(server.request("/stream?count=1000000&size=100&delayMs=5"))
            var seen = 0
            for try await _ in streamed.body {
                seen += 1
                if seen == 3 { break }
            }
            // The connection closes once the transfer is removed.
            let deadline = ContinuousClock.now + .seconds(30)
            while server.snapshot.connectionsOpen > 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(server.snapshot.connectionsOpen == 0, "the transfer kept its connection after the consumer left")
            #expect(seen == 3)
        }
    }

    @Test func cancellingTheConsumerTaskEndsWithCancelled() async throws {
        try await withLoopback { server, transport in
            let streamed = try await transport.stream(server.request("/stall"))
            let consumer = Task { try await streamed.body.collect() }
            try await Task.sleep(for: .milliseconds(50))
            consumer.cancel()
            let error = await serviceError { _ = try await consumer.value }
            #expect(error?.code == .cancelled)
        }
    }

    @Test func aTruncatedStreamEndsWithAnError() async throws {
        try await withLoopback { server, transport in
            let streamed = try await transport.stream(server.request("/close-mid-body"))
            let error = await serviceError { _ = try await streamed.body.collect() }
            #expect(error?.code == .truncatedBody)
        }
    }
}
