import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Logging
import Testing

/// Starts a loopback server, a transport and a coordinator for one test; stops them after.
func withCoordinator<T>(
    configuration: RequestCoordinator.Configuration = .init(),
    _ body: (TestServer, RequestCoordinator) async throws -> T
) async throws -> T {
    let server = try await TestServer.start()
    let transport = CurlTransport()
    let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
    defer { _ = server }
    do {
        let result = try await body(server, coordinator)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()
        return result
    } catch {
        await coordinator.shutdown(cancellingInFlight: true)
        await transport.shutdown(cancellingInFlight: true)
        await server.stop()
        throw error
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

/// A clock whose `sleep` returns at once and records what was asked: retries are tested
/// without waiting.
final class RecordingClock: Clock, Sendable {
    typealias Duration = Swift.Duration
    struct Instant: InstantProtocol {
        var offset: Swift.Duration
        func advanced(by duration: Swift.Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Swift.Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = LockedValue<(now: Swift.Duration, sleeps: [Swift.Duration])>((.zero, []))
    var now: Instant { Instant(offset: state.withLock { $0.now }) }
    var minimumResolution: Swift.Duration { .nanoseconds(1) }
    var sleeps: [Swift.Duration] { state.withLock { $0.sleeps } }

    func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(deadline.offset - state.now)
            state.now = max(state.now, deadline.offset)
        }
    }
}

/// Collects log records so tests can check what is (and is not) logged.
struct CapturingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    final class Store: Sendable {
        let records = LockedValue<[Record]>([])
        var all: [Record] { records.withLock { $0 } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        for (key, value) in event.metadata ?? [:] { merged[key] = value }
        let record = Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
        store.records.withLock { $0.append(record) }
    }
}

/// A model served by `/gate` and the mock routes.
struct Gate: Codable, Sendable, Equatable {
    var gate: String
    var served: Int
}

/// A resource over any path, with a type per use so tests can vary the shape.
struct GateResource: Resource {
    typealias Response = Gate
    var baseURL: String
    var name = "g"
    var headers: HTTPFields = [:]
    var coalescing: Coalescing = .automatic
    var endpoint: Endpoint { Endpoint(baseURL, path: "/gate", query: ["name": name]) }
}

/// Whether `count` events named `name` come within `timeout` (a test whose events never come
/// fails instead of hanging). `events` is finished after: read the rest from another stream.
func waitForEvents(
    _ count: Int, _ name: CoordinatorEvent.Kind.Name, in events: AsyncStream<CoordinatorEvent>,
    timeout: Duration = .seconds(60)
) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            var seen = 0
            for await event in events where event.kind.name == name {
                seen += 1
                if seen == count { return true }
            }
            return false
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}
