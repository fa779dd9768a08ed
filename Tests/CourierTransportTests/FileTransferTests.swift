import CourierTestServer
import Foundation
import Testing

@testable import CourierTransport

@Suite struct FileTransferTests {
    static let fiftyMegabytes = 50 << 20

    @Test func fiftyMegabytesUploadFromAFileByteExact() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("upload.bin")
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        var crc: UInt32 = 0
        for offset in stride(from: 0, to: Self.fiftyMegabytes, by: 1 << 20) {
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            chunk.withUnsafeMutableBytes { Payloads.fillPattern($0, offset: offset) }
            crc = chunk.withUnsafeBytes { Compression.crc32($0, continuing: crc) }
            try handle.write(contentsOf: chunk)
        }
        try handle.close()

        try await withLoopback { server, transport in
            let (progress, reporter) = ProgressReporter.makeStream()
            var options = TransferOptions()
            options.progress = reporter
            let collector = Task { await progress.reduce(into: [TransferProgress]()) { $0.append($1) } }
            let response = try await transport.send(
                server.request("/echo", method: .put), body: .file(atPath: path), options: options)
            let echo = try Echo(response.body)
            #expect(echo.bodyLength == Self.fiftyMegabytes)
            #expect(echo.bodyCRC == crc)
            let values = await collector.value
            #expect(values.last?.bytesSent == Int64(Self.fiftyMegabytes))
            #expect(zip(values, values.dropFirst()).allSatisfy { $0.bytesSent <= $1.bytesSent })
        }
    }

    @Test func aMissingUploadFileIsAFileAccessError() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError {
                _ = try await transport.send(
                    server.request("/echo", method: .post), body: .file(atPath: "/nonexistent/courier-upload"))
            }
            #expect(error?.code == .fileAccess)
        }
    }

    @Test func fiftyMegabytesDownloadToAFileByteExactWithBoundedBuffering() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("download.bin")
        try await withLoopback { server, transport in
            let (progress, reporter) = ProgressReporter.makeStream()
            var options = TransferOptions()
            options.progress = reporter
            options.maximumBodySize = nil
            let collector = Task { await progress.reduce(into: [TransferProgress]()) { $0.append($1) } }

            let streamed = try await transport.streamResponse(
                server.request("/bytes?n=\(Self.fiftyMegabytes)"), options: options)
            var crc: UInt32 = 0
            var count = 0
            for try await chunk in streamed.body {
                crc = chunk.withUnsafeBytes { Compression.crc32($0, continuing: crc) }
                count += chunk.count
            }
            #expect(count == Self.fiftyMegabytes)
            #expect(crc == Payloads.patternCRC(count: Self.fiftyMegabytes))
            #expect(streamed.body.bufferedHighWaterMark <= transport.configuration.streamBufferSize + (64 << 10))

            let values = await collector.value
            #expect(values.last?.bytesReceived == Int64(Self.fiftyMegabytes))
            #expect(values.last?.expectedBytesToReceive == Int64(Self.fiftyMegabytes))
            #expect(zip(values, values.dropFirst()).allSatisfy { $0.bytesReceived <= $1.bytesReceived })

            var fileOptions = TransferOptions()
            fileOptions.maximumBodySize = nil
            let response = try await transport.download(
                server.request("/bytes?n=\(Self.fiftyMegabytes)"), to: path, options: fileOptions)
            #expect(response.head.status == .ok)
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(data.count == Self.fiftyMegabytes)
            #expect(data.withUnsafeBytes { Compression.crc32($0) } == crc)
        }
    }

    @Test func aGzipDownloadInflatesAsItStreams() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("text.json")
        try await withLoopback { server, transport in
            _ = try await transport.download(server.request("/gzip?n=2000000"), to: path)
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(Array(data) == Payloads.text(count: 2_000_000))
        }
    }

    @Test func aFailedDownloadLeavesNoFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("broken.bin")
        try await withLoopback { server, transport in
            let error = await serviceError {
                _ = try await transport.download(server.request("/close-mid-body"), to: path)
            }
            #expect(error?.code == .truncatedBody)
            #expect(!FileManager.default.fileExists(atPath: path))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(leftovers.isEmpty)
        }
    }
}
