@testable import CourierOpenAPI
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
        configuration.retryPolicies["upload"] = RetryPolicy.none
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

    @Test("the threshold is inclusive: that many bytes stay in memory, one more goes to a file")
    func thresholdBoundary() async throws {
        let spool = try SpoolDirectory()
        defer { spool.delete() }
        let threshold = 1 << 20
        for length in [HTTPBody.Length.unknown, .known(Int64(threshold))] {
            let atThreshold = try await RequestSpool.make(
                from: PatternChunks.body(count: threshold, length: length), threshold: threshold, limit: 64 << 20,
                directory: spool.url)
            #expect(atThreshold.path == nil)
            #expect(atThreshold.body?.inMemoryBytes?.count == threshold)
        }
        for length in [HTTPBody.Length.unknown, .known(Int64(threshold + 1))] {
            let past = try await RequestSpool.make(
                from: PatternChunks.body(count: threshold + 1, length: length), threshold: threshold, limit: 64 << 20,
                directory: spool.url)
            let path = try #require(past.path)
            #expect(past.body?.inMemoryBytes == nil)
            let written = try Data(contentsOf: URL(filePath: path))
            #expect(written.count == threshold + 1)
            #expect(written.elementsEqual((0..<threshold + 1).lazy.map { Payloads.patternByte(at: $0) }))
            past.remove()
            #expect(spool.files().isEmpty)
        }
    }

    @Test("past the threshold, the body is read and written off the cooperative pool")
    func spoolingRunsOffThePool() async throws {
        let spool = try SpoolDirectory()
        defer { spool.delete() }
        let chunks = ExecutorRecordingChunks(count: 32)
        let body = HTTPBody(chunks, length: .unknown, iterationBehavior: .single)
        let spooled = try await RequestSpool.make(from: body, threshold: 1 << 20, limit: 64 << 20, directory: spool.url)
        defer { spooled.remove() }
        #expect(spooled.path != nil)
        // 16 chunks of 64 KiB fill the 1 MiB threshold in memory; the 17th crosses it. Every
        // later chunk is made, and written, on the spool executor.
        let expected = Array(repeating: false, count: 17) + Array(repeating: true, count: 15)
        #expect(chunks.onSpoolExecutor.withLock { $0 } == expected)
    }

    static func expected(_ count: Int) -> UploadAttempt {
        UploadAttempt(bodyLength: count, bodyCRC: Payloads.patternCRC(count: count))
    }
}

/// A fresh directory for spool files, listed by the tests.
struct SpoolDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "courier-spool-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    }

    /// The paths of the request spool files in the directory (an issue, and a placeholder
    /// entry, when it cannot be listed).
    func files(sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: url.path)
                .filter { $0.hasPrefix(RequestSpool.filePrefix) }
                .map { url.appending(path: $0).path }
        } catch {
            Issue.record("cannot list \(url.path): \(error)", sourceLocation: sourceLocation)
            return ["<unlistable>"]
        }
    }

    func delete() {
        let readOnly = url.appending(path: "read-only").path
        try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: readOnly)
        try? FileManager.default.removeItem(at: url)
    }
}

/// A loopback server and a `CourierClientTransport` over curl whose spool directory is fresh
/// (unless `configuration` names one other than the default); all stopped and removed after
/// `body`.
func withUploads(
    _ configuration: CourierClientTransport.Configuration = .init(),
    coordinator coordinatorConfiguration: RequestCoordinator.Configuration = .init(),
    _ body: (TestServer, CourierClientTransport, SpoolDirectory) async throws -> Void
) async throws {
    let spool = try SpoolDirectory()
    defer { spool.delete() }
    var configuration = configuration
    if configuration.requestBodySpoolDirectory == FileManager.default.temporaryDirectory {
        configuration.requestBodySpoolDirectory = spool.url
    }
    let server = try await TestServer.start()
    let curl = CurlTransport()
    let coordinator = RequestCoordinator(transport: curl, configuration: coordinatorConfiguration)
    let transport = CourierClientTransport(coordinator: coordinator, configuration: configuration)
    do {
        try await body(server, transport, spool)
        await coordinator.shutdown()
        await curl.shutdown()
        await server.stop()
    } catch {
        await coordinator.shutdown(cancellingInFlight: true)
        await curl.shutdown(cancellingInFlight: true)
        await server.stop()
        throw error
    }
}

/// `PUT /openapi/uploads/<name>` with `body`, as operation `upload`; the server's report.
func put(
    _ transport: CourierClientTransport, _ server: TestServer, _ name: String, _ body: HTTPBody
) async throws -> UploadAttempt.Report {
    var request = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/uploads/\(name)")
    request.headerFields[.contentType] = "application/octet-stream"
    let baseURL = try #require(URL(string: "\(server.baseURL)/openapi"))
    let (response, responseBody) = try await transport.send(
        request, body: body, baseURL: baseURL, operationID: "upload")
    #expect(response.status == .ok)
    let data = try await Data(collecting: try #require(responseBody), upTo: 1 << 20)
    return try JSONDecoder().decode(UploadAttempt.Report.self, from: data)
}

/// The `ServiceError` `body` threw (as is, or as a `ClientError`'s underlying error), or nil
/// (recording an issue) when it threw something else or nothing.
func serviceError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async
    -> ServiceError?
{
    do {
        try await body()
        Issue.record("expected a ServiceError, but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as ServiceError {
        return error
    } catch let error as ClientError {
        if let service = error.underlyingError as? ServiceError { return service }
        Issue.record("underlyingError is \(type(of: error.underlyingError))", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a ServiceError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The test server's binary pattern as 64 KiB chunks made as they are asked for (never held
/// whole). With `pausingAfter`, it signals once that many bytes are out, then waits until the
/// reading task is cancelled.
struct PatternChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk

    /// What a body made with `failingAfter` throws.
    struct ProducerFailure: Error {}

    let count: Int
    let pause: (after: Int, signal: AsyncStream<Void>.Continuation)?
    var failure: Int?

    /// A single-pass body of `count` pattern bytes (length unknown unless given); it throws
    /// ``ProducerFailure`` once `failingAfter` bytes are out.
    static func body(
        count: Int, length: HTTPBody.Length = .unknown, pausingAfter: Int? = nil,
        signal: AsyncStream<Void>.Continuation? = nil, failingAfter: Int? = nil
    ) -> HTTPBody {
        let pause = pausingAfter.flatMap { after in signal.map { (after, $0) } }
        let chunks = PatternChunks(count: count, pause: pause, failure: failingAfter)
        return HTTPBody(chunks, length: length, iterationBehavior: .single)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        let pause: (after: Int, signal: AsyncStream<Void>.Continuation)?
        let failure: Int?
        var offset = 0

        mutating func next() async throws -> HTTPBody.ByteChunk? {
            if let failure, offset >= failure { throw ProducerFailure() }
            if let pause, offset >= pause.after {
                pause.signal.yield()
                try await Task.sleep(for: .seconds(120))  // ends early: the test cancels
            }
            guard offset < count else { return nil }
            let size = Swift.min(64 << 10, count - offset, (pause?.after ?? .max) - offset)
            var chunk = [UInt8](repeating: 0, count: size)
            chunk.withUnsafeMutableBytes { Payloads.fillPattern($0, offset: offset) }
            offset += size
            return chunk[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, pause: pause, failure: failure) }
}

/// `count` chunks of 64 KiB that record, chunk by chunk, whether they were asked for on the
/// spool executor.
final class ExecutorRecordingChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk

    let count: Int
    let onSpoolExecutor = Mutex<[Bool]>([])

    init(count: Int) { self.count = count }

    struct AsyncIterator: AsyncIteratorProtocol {
        let owner: ExecutorRecordingChunks
        var made = 0

        mutating func next() async -> HTTPBody.ByteChunk? {
            guard made < owner.count else { return nil }
            made += 1
            let onExecutor = SpoolWriteExecutor.isCurrent
            owner.onSpoolExecutor.withLock { $0.append(onExecutor) }
            return ArraySlice(repeating: UInt8(truncatingIfNeeded: made), count: 64 << 10)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(owner: self) }
}
