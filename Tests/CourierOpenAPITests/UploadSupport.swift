import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

@testable import CourierOpenAPI

// What the upload tests share: a spool directory, a server with a transport, the upload call,
// and request bodies made chunk by chunk.

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
