import CourierServices
import CourierTestServer
import Foundation
import HTTPTypes
import Testing

/// Streamed loads and uploads with progress through the coordinator.
@Suite("Streamed loads")
struct StreamLoadTests {
    @Test("a stream goes through the token refresh before its first byte, then reads the whole body")
    func streamThroughDecorator() async throws {
        let tokens = RefreshingTokens()
        var configuration = transferConfiguration()
        configuration.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let streamed = try await coordinator.stream(
                TransferResource(server, "/transfers/auth", ["valid": "new", "n": "600000"]))
            #expect(streamed.response.status == .ok)
            var body = Data()
            for try await chunk in streamed.body { body.append(chunk) }
            #expect(body == patternBytes(600_000))
            #expect(tokens.refreshes == 1)
            #expect(server.requests(to: "/transfers/auth").count == 2)
        }
    }

    @Test("a stream's trailers show once its body has been read to the end")
    func streamTrailers() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let streamed = try await coordinator.stream(TransferResource(server, "/trailers", ["kind": "gzip"]))
            #expect(streamed.body.trailers == nil)
            var body = Data()
            for try await chunk in streamed.body { body.append(chunk) }
            #expect(String(decoding: body, as: UTF8.self) == "hello, trailers")
            #expect(streamed.body.trailers?[HTTPField.Name("Checksum")!] == "7f3a")
        }
    }

    @Test("a 503 is retried before the head is returned; a status the resource refuses throws")
    func retriesAndStatus() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let streamed = try await coordinator.stream(
                TransferResource(server, "/flaky", ["key": "stream", "failures": "1"]))
            var body = Data()
            for try await chunk in streamed.body { body.append(chunk) }
            #expect(String(decoding: body, as: UTF8.self) == #"{"attempts":2}"#)
            let error = await serviceError { _ = try await coordinator.stream(TransferResource(server, "/status/404")) }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.bodyExcerpt == "status 404")
        }
    }

    @Test("a body cut mid-stream fails the reader with truncatedBody and is not retried")
    func cutIsNotRetried() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let streamed = try await coordinator.stream(
                TransferResource(server, "/transfers/file", ["n": "300000", "cutAt": "1000", "key": "stream-cut"]))
            let error = await serviceError { for try await _ in streamed.body {} }
            #expect(error?.code == .truncatedBody)
            #expect(server.requests(to: "/transfers/file").count == 1)
        }
    }

    @Test("shutdown(cancellingInFlight:) fails an open body with shutDown; later streams are refused")
    func shutdownCancelsOpenBody() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let streamed = try await coordinator.stream(
                TransferResource(server, "/transfers/held", ["name": "stream-stop"]))
            var iterator = streamed.body.makeAsyncIterator()
            let first = try await iterator.next()
            #expect(first?.isEmpty == false)
            await coordinator.shutdown(cancellingInFlight: true)
            let error = await serviceError { while try await iterator.next() != nil {} }
            #expect(error?.code == .shutDown)
            let refused = await serviceError { _ = try await coordinator.stream(TransferResource(server, "/json")) }
            #expect(refused?.code == .shutDown)
            server.openGate("stream-stop")
        }
    }

    @Test("shutdown drains: it returns once an open body was read to its end")
    func drainWaitsForTheReader() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let streamed = try await coordinator.stream(
                TransferResource(server, "/transfers/held", ["name": "stream-drain", "n": "100000"]))
            let reader = Task {
                var count = 0
                for try await chunk in streamed.body { count += chunk.count }
                return count
            }
            async let drained: Void = coordinator.shutdown()
            server.openGate("stream-drain")
            await drained
            let read = try await reader.value
            #expect(read == 100_000)
        }
    }

    @Test("a reader that stops early, or never reads, lets its stream go: drain does not wait for it")
    func readerThatStopsEarly() async throws {
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let held = TransferResource(server, "/transfers/held", ["name": "stream-early"])
            let streamed = try await coordinator.stream(held)
            for try await chunk in streamed.body {
                #expect(!chunk.isEmpty)
                break
            }
            _ = try await coordinator.stream(TransferResource(server, "/transfers/held", ["name": "stream-unread"]))
            await coordinator.shutdown()
            let refused = await serviceError { _ = try await coordinator.stream(held) }
            #expect(refused?.code == .shutDown)
            server.openGate("stream-early")
            server.openGate("stream-unread")
        }
    }

    @Test("an upload from a file reports its bytes sent, moving forward, up to the file's size")
    func uploadProgress() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("upload.bin")
        let size = 3 << 20
        try patternBytes(size).write(to: URL(fileURLWithPath: path))
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            var resource = TransferResource(server, "/echo")
            resource.method = .put
            resource.body = .file(atPath: path)
            let handle = resource.upload(using: coordinator)
            let collector = collectProgress(handle)
            let echo = try Echo(try await handle.value.value)
            #expect(echo.bodyLength == size)
            #expect(echo.bodyCRC == Payloads.patternCRC(count: size))
            let values = await collector.value
            #expect(values.last?.bytesSent == Int64(size))
            #expect(zip(values, values.dropFirst()).allSatisfy { $0.bytesSent <= $1.bytesSent })
        }
    }
}
