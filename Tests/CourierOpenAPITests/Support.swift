import CourierOpenAPI
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// A loopback server, a coordinator over curl, and the generated `Client` over a
/// `CourierClientTransport` aimed at the server's `/openapi` catalog; all stopped after `body`.
func withClient<T>(
    configuration: RequestCoordinator.Configuration = .init(),
    transport transportConfiguration: CourierClientTransport.Configuration = .init(),
    _ body: (TestServer, RequestCoordinator, Client) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    let curl = CurlTransport()
    let coordinator = RequestCoordinator(transport: curl, configuration: configuration)
    let client = Client(
        serverURL: try #require(URL(string: "\(server.baseURL)/openapi")),
        transport: CourierClientTransport(coordinator: coordinator, configuration: transportConfiguration))
    do {
        let result = try await body(server, coordinator, client)
        await coordinator.shutdown()
        await curl.shutdown()
        await server.stop()
        return result
    } catch {
        await coordinator.shutdown(cancellingInFlight: true)
        await curl.shutdown(cancellingInFlight: true)
        await server.stop()
        throw error
    }
}

/// The `ServiceError` a generated operation failed with: the runtime's `ClientError` must
/// carry it as its `underlyingError`. Records an issue for anything else, or no error.
func underlyingServiceError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> ServiceError? {
    do {
        try await body()
        Issue.record("expected a ClientError, but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as ClientError {
        if let service = error.underlyingError as? ServiceError { return service }
        Issue.record("underlyingError is \(type(of: error.underlyingError))", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a ClientError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Collects events until `stop` says so, or 30 seconds pass (never waits unbounded).
func collectEvents(
    _ stream: AsyncStream<CoordinatorEvent>, until stop: @escaping @Sendable ([CoordinatorEvent]) -> Bool
) async -> [CoordinatorEvent] {
    await withTaskGroup(of: [CoordinatorEvent]?.self) { group in
        group.addTask {
            var events: [CoordinatorEvent] = []
            for await event in stream {
                events.append(event)
                if stop(events) { break }
            }
            return events
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(30))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first ?? []
    }
}
