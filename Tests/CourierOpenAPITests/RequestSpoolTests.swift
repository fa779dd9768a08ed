import CourierOpenAPI
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// Request bodies past the spool threshold go to a temporary file that every attempt re-reads
/// and that is removed when the request ends; smaller ones stay in memory.
@Suite("Request bodies spooled to disk")
struct RequestSpoolTests {
    static let large = 5_000_000

    @Test("a 5 MB body of unknown length arrives byte-exact, and its spool file is gone after")
    func largeUnknownLengthBody() async throws {
        try await withUploads { server, transport, spool in
            let report = try await put(transport, server, "plain", PatternChunks.body(count: Self.large))
            #expect(report.attempts == [Self.expected(Self.large)])
            #expect(spool.files().isEmpty)
        }
    }

    @Test("a spooled body retried after a 503 with Retry-After arrives byte-exact twice")
    func retriedBodyIsReread() async throws {
        try await withUploads { server, transport, spool in
            let report = try await put(transport, server, "flaky-a", PatternChunks.body(count: Self.large))
            #expect(report.attempts == [Self.expected(Self.large), Self.expected(Self.large)])
            #expect(spool.files().isEmpty)
        }
    }

    @Test("a spooled body replayed after a 401 and a token refresh arrives byte-exact twice")
    func replayedBodyIsReread() async throws {
        let tokens = RotatingTokens()
        var coordinator = RequestCoordinator.Configuration()
        coordinator.decorators = [BearerTokenDecorator(tokens: tokens)]
        try await withUploads(coordinator: coordinator) { server, transport, spool in
            let report = try await put(transport, server, "auth-fresh", PatternChunks.body(count: Self.large))
            #expect(report.attempts == [Self.expected(Self.large), Self.expected(Self.large)])
            #expect(tokens.refreshes == 1)
            #expect(spool.files().isEmpty)
        }
    }

    /// No retry can send the body again (the operation's policy is `.none`): it streams as the
    /// body produces it, and no spool file is ever made, though it is past the threshold.
    @Test("a body no retry needs streams without a spool file, byte-exact")
    func bodyWithoutRetriesStreams() async throws {
        var configuration = CourierClientTransport.Configuration()
        configuration.retryPolicies["upload"] = RetryPolicy.none
        try await withUploads(configuration) { server, transport, spool in
            let upload = Task {
                try await put(transport, server, "gated-streamed", PatternChunks.body(count: Self.large))
            }
            #expect(await server.waitUntilHeld("streamed", count: 1))
            #expect(spool.files().isEmpty)
            server.openGate("streamed")
            let report = try await upload.value
            #expect(report.attempts == [Self.expected(Self.large)])
        }
    }

    /// A decorator that replays after a token refresh needs the body twice: it is spooled even
    /// when no retry would resend it.
    @Test("with a replaying decorator a body no retry needs is still spooled, and replays")
    func replayingDecoratorKeepsTheSpool() async throws {
        let tokens = RotatingTokens()
        var coordinator = RequestCoordinator.Configuration()
        coordinator.decorators = [BearerTokenDecorator(tokens: tokens)]
        var configuration = CourierClientTransport.Configuration()
        configuration.retryPolicies["upload"] = RetryPolicy.none
        try await withUploads(configuration, coordinator: coordinator) { server, transport, spool in
            let report = try await put(transport, server, "auth-fresh", PatternChunks.body(count: Self.large))
            #expect(report.attempts == [Self.expected(Self.large), Self.expected(Self.large)])
            #expect(tokens.refreshes == 1)
            #expect(spool.files().isEmpty)
        }
    }

    @Test("a streamed body past the size limit fails with invalidRequest")
    func streamedBodyPastTheLimit() async throws {
        var configuration = CourierClientTransport.Configuration()
        configuration.retryPolicies["upload"] = RetryPolicy.none
        configuration.maximumRequestBodySize = 2_000_000
        try await withUploads(configuration) { server, transport, spool in
            let error = await serviceError {
                _ = try await put(transport, server, "too-large", PatternChunks.body(count: Self.large))
            }
            #expect(error?.code == .invalidRequest)
            #expect(spool.files().isEmpty)
        }
    }

    @Test("the spool file (0600, the whole body) exists during the upload and is gone after success")
    func spoolFileLivesUntilSuccess() async throws {
        try await withUploads { server, transport, spool in
            let upload = Task { try await put(transport, server, "gated-ok", PatternChunks.body(count: Self.large)) }
            #expect(await server.waitUntilHeld("ok", count: 1))
            let files = spool.files()
            #expect(files.count == 1)
            let attributes = try FileManager.default.attributesOfItem(atPath: try #require(files.first))
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect((attributes[.size] as? NSNumber)?.intValue == Self.large)
            server.openGate("ok")
            #expect(try await upload.value.attempts == [Self.expected(Self.large)])
            #expect(spool.files().isEmpty)
        }
    }

    @Test("the spool file is gone after a failed request")
    func spoolFileGoneAfterFailure() async throws {
        var configuration = CourierClientTransport.Configuration()
        // A policy that may retry, so the body is spooled (with none it would stream); the
        // second attempt fails as the first did, the gate being open.
        configuration.retryPolicies["upload"] = RetryPolicy(
            maximumAttempts: 2, initialDelay: .milliseconds(1), jitter: 0)
        try await withUploads(configuration) { server, transport, spool in
            let upload = Task { try await put(transport, server, "dropped-f", PatternChunks.body(count: Self.large)) }
            #expect(await server.waitUntilHeld("f", count: 1))
            #expect(spool.files().count == 1)
            server.openGate("f")
            let error = await serviceError { _ = try await upload.value }
            #expect(error != nil && error?.code != .cancelled)
            #expect(spool.files().isEmpty)
        }
    }

    @Test("the spool file is gone after the caller cancels during the upload")
    func spoolFileGoneAfterCancellation() async throws {
        try await withUploads { server, transport, spool in
            let upload = Task { try await put(transport, server, "gated-c", PatternChunks.body(count: Self.large)) }
            #expect(await server.waitUntilHeld("c", count: 1))
            #expect(spool.files().count == 1)
            upload.cancel()
            let error = await serviceError { _ = try await upload.value }
            #expect(error?.code == .cancelled)
            #expect(spool.files().isEmpty)
        }
    }

    @Test("a caller that cancels while the body is being spooled leaves no file and sends nothing")
    func cancelledMidSpool() async throws {
        try await withUploads { server, transport, spool in
            let (paused, pause) = AsyncStream<Void>.makeStream()
            let body = PatternChunks.body(count: Self.large, pausingAfter: 2 << 20, signal: pause)
            let upload = Task { try await put(transport, server, "plain", body) }
            var signals = paused.makeAsyncIterator()
            _ = await signals.next()
            // Everything before the pause is on disk: the threshold's worth went to the file.
            let files = spool.files()
            #expect(files.count == 1)
            let size = try FileManager.default.attributesOfItem(atPath: try #require(files.first))[.size] as? NSNumber
            #expect(size?.intValue == 2 << 20)
            upload.cancel()
            let error = await serviceError { _ = try await upload.value }
            #expect(error?.code == .cancelled)
            #expect(spool.files().isEmpty)
            #expect(server.snapshot.connectionsAccepted == 0)
        }
    }

    @Test("a body that fails while it is spooled fails with encodingFailed: no file left, nothing sent")
    func failingBodyLeavesNoFile() async throws {
        try await withUploads { server, transport, spool in
            let body = PatternChunks.body(count: Self.large, failingAfter: 3 << 20)
            let error = await serviceError { _ = try await put(transport, server, "plain", body) }
            #expect(error?.code == .encodingFailed)
            #expect(error?.underlying is PatternChunks.ProducerFailure)
            #expect(spool.files().isEmpty)
            #expect(server.snapshot.connectionsAccepted == 0)
        }
    }

    @Test("a body over maximumRequestBodySize fails with invalidRequest: no file left, nothing sent")
    func oversizedBodyIsRefused() async throws {
        var configuration = CourierClientTransport.Configuration()
        configuration.maximumRequestBodySize = 3 << 20
        try await withUploads(configuration) { server, transport, spool in
            for length in [HTTPBody.Length.unknown, .known(Int64(Self.large))] {
                let body = PatternChunks.body(count: Self.large, length: length)
                let error = await serviceError { _ = try await put(transport, server, "plain", body) }
                #expect(error?.code == .invalidRequest)
                #expect(spool.files().isEmpty)
            }
            #expect(server.snapshot.connectionsAccepted == 0)
        }
    }

    @Test(
        "a spool directory that cannot be written fails with fileAccess and sends nothing",
        arguments: ["missing", "file", "read-only"])
    func unwritableSpoolDirectory(_ kind: String) async throws {
        let parent = try SpoolDirectory()
        defer { parent.delete() }
        var target = parent.url.appending(path: kind)
        switch kind {
        case "file":
            try Data("not a directory".utf8).write(to: target)
        case "read-only" where geteuid() == 0:
            // root writes through permissions, but not into procfs.
            target = URL(filePath: "/proc", directoryHint: .isDirectory)
        case "read-only":
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
            try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: target.path)
        default:
            target = target.appending(path: "deeper")
        }
        var configuration = CourierClientTransport.Configuration()
        configuration.requestBodySpoolDirectory = target
        try await withUploads(configuration) { server, transport, _ in
            for length in [HTTPBody.Length.unknown, .known(Int64(Self.large))] {
                let body = PatternChunks.body(count: Self.large, length: length)
                let error = await serviceError { _ = try await put(transport, server, "plain", body) }
                #expect(error?.code == .fileAccess)
            }
            #expect(server.snapshot.connectionsAccepted == 0)
        }
    }

    @Test("a body under the threshold never touches disk")
    func smallBodyStaysInMemory() async throws {
        try await withUploads { server, transport, spool in
            let count = 100_000
            let upload = Task { try await put(transport, server, "gated-m", PatternChunks.body(count: count)) }
            #expect(await server.waitUntilHeld("m", count: 1))
            #expect(spool.files().isEmpty)
            server.openGate("m")
            let report = try await upload.value
            #expect(report.attempts == [Self.expected(count)])
        }
    }

    @Test("a lower threshold sends a smaller body to a file; it still arrives byte-exact")
    func lowerThreshold() async throws {
        var configuration = CourierClientTransport.Configuration()
        configuration.requestBodySpoolThreshold = 50_000
        try await withUploads(configuration) { server, transport, spool in
            let count = 100_000
            let upload = Task { try await put(transport, server, "gated-low", PatternChunks.body(count: count)) }
            #expect(await server.waitUntilHeld("low", count: 1))
            let files = spool.files()
            #expect(files.count == 1)
            let attributes = try FileManager.default.attributesOfItem(atPath: try #require(files.first))
            #expect((attributes[.size] as? NSNumber)?.intValue == count)
            server.openGate("low")
            #expect(try await upload.value.attempts == [Self.expected(count)])
            #expect(spool.files().isEmpty)
        }
    }

    static func expected(_ count: Int) -> UploadAttempt {
        UploadAttempt(bodyLength: count, bodyCRC: Payloads.patternCRC(count: count))
    }
}
