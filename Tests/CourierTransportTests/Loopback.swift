import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// Starts a server and a transport for one test, and stops both afterwards.
func withLoopback<T>(
    configuration: CurlTransport.Configuration = .init(),
    _ body: (TestServer, CurlTransport) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    let transport = CurlTransport(configuration: configuration)
    do {
        let result = try await body(server, transport)
        await transport.shutdown()
        await server.stop()
        return result
    } catch {
        await transport.shutdown(cancellingInFlight: true)
        await server.stop()
        throw error
    }
}

extension TestServer {
    /// A request to `path` on this server.
    func request(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: authority, path: path, headerFields: headers)
    }
}

/// The `ServiceError` that `body` throws, recording an issue when it throws something else
/// or nothing.
func serviceError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> ServiceError? {
    do {
        try await body()
        Issue.record("expected a ServiceError, but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as ServiceError {
        return error
    } catch {
        Issue.record("expected a ServiceError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// A temporary directory removed when the value is dropped.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "courier-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}
