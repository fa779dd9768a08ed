import CourierServices
import CourierTestServer
import Foundation
import Testing

/// Downloads after a connection broke mid-body: resumed with `Range` when the server allows it,
/// started over otherwise, and never a partial file at the destination.
@Suite("Download resume")
struct DownloadResumeTests {
    static let size = 1_000_000
    static let cut = 400_000

    @Test(
        "a cut download resumes with Range and If-Range and ends byte-identical", arguments: ["etag", "modified"])
    func resumes(validator: String) async throws {
        let directory = try TransferDirectory()
        let path = directory.file("resumed.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let resource = TransferResource(
                server, "/transfers/file",
                ["n": "\(Self.size)", "key": "r-\(validator)", "cutAt": "\(Self.cut)", "validator": validator])
            let loaded = try await coordinator.download(resource, to: path).value
            #expect(loaded.value.size == Int64(Self.size))
            #expect(loaded.value.resumeCount == 1)
            #expect(loaded.response.status.code == 206)
            let requests = server.requests(to: "/transfers/file")
            try #require(requests.count == 2)
            #expect(requests[0].header("Range") == nil)
            #expect(requests[1].header("Range") == "bytes=\(Self.cut)-")
            let expected = validator == "etag" ? TestServer.transferETag : TestServer.transferLastModified
            #expect(requests[1].header("If-Range") == expected)
            #expect(FileManager.default.contents(atPath: path) == patternBytes(Self.size))
            #expect(directory.contents == ["resumed.bin"])
        }
    }

    @Test("a server that ignores Range answers 200, and the download starts over")
    func restartsWhenRangeIsIgnored() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("restarted.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let resource = TransferResource(
                server, "/transfers/file",
                ["n": "\(Self.size)", "key": "ignore", "cutAt": "\(Self.cut)", "honorRange": "0"])
            let loaded = try await coordinator.download(resource, to: path).value
            #expect(loaded.value.resumeCount == 0)
            #expect(loaded.response.status.code == 200)
            let requests = server.requests(to: "/transfers/file")
            try #require(requests.count == 2)
            #expect(requests[1].header("Range") == "bytes=\(Self.cut)-")
            #expect(FileManager.default.contents(atPath: path) == patternBytes(Self.size))
        }
    }

    @Test(
        "without a strong validator or Accept-Ranges, the retry asks for the whole body",
        arguments: ["weak", "none", "noranges"])
    func restartsWithoutValidator(variant: String) async throws {
        let directory = try TransferDirectory()
        let path = directory.file("whole.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            var query = ["n": "\(Self.size)", "key": "v-\(variant)", "cutAt": "\(Self.cut)"]
            if variant == "noranges" { query["ranges"] = "0" } else { query["validator"] = variant }
            let loaded = try await coordinator.download(TransferResource(server, "/transfers/file", query), to: path)
                .value
            #expect(loaded.value.resumeCount == 0)
            let requests = server.requests(to: "/transfers/file")
            try #require(requests.count == 2)
            #expect(requests[1].header("Range") == nil)
            #expect(requests[1].header("If-Range") == nil)
            #expect(FileManager.default.contents(atPath: path) == patternBytes(Self.size))
        }
    }

    @Test("cut on every attempt: truncatedBody, the old file untouched, no temporary file left")
    func exhaustedRetriesLeaveTheOldFile() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("kept.bin")
        try Data("the old file".utf8).write(to: URL(fileURLWithPath: path))
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let resource = TransferResource(
                server, "/transfers/file", ["n": "\(Self.size)", "key": "always", "cutAt": "\(Self.cut)", "cuts": "10"])
            let error = await serviceError { _ = try await coordinator.download(resource, to: path).value }
            #expect(error?.code == .truncatedBody)
            #expect(server.requests(to: "/transfers/file").count == 3)
            #expect(FileManager.default.contents(atPath: path) == Data("the old file".utf8))
            #expect(directory.contents == ["kept.bin"])
        }
    }

    @Test("a POST is not retried after a cut (not idempotent), and leaves no file")
    func postIsNotRetried() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("post.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            var resource = TransferResource(
                server, "/transfers/file", ["n": "\(Self.size)", "key": "post", "cutAt": "\(Self.cut)"])
            resource.method = .post
            let error = await serviceError { _ = try await coordinator.download(resource, to: path).value }
            #expect(error?.code == .truncatedBody)
            #expect(server.requests(to: "/transfers/file").count == 1)
            #expect(directory.contents.isEmpty)
        }
    }

    @Test("an unacceptable status writes nothing and keeps the body as the error's excerpt")
    func unacceptableStatus() async throws {
        let directory = try TransferDirectory()
        let path = directory.file("missing.bin")
        try await withCoordinator(configuration: transferConfiguration()) { server, coordinator in
            let error = await serviceError {
                _ = try await coordinator.download(TransferResource(server, "/status/404"), to: path).value
            }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.status?.code == 404)
            #expect(error?.bodyExcerpt == "status 404")
            #expect(directory.contents.isEmpty)
        }
    }
}
