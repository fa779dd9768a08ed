import CourierCore
import CourierLifecycle
import CourierTestServer
import Foundation
import Logging
import Testing

/// The coordinator as a swift-service-lifecycle service, against the loopback server: graceful
/// shutdown lets loads in flight finish and refuses new ones; past the drain timeout, or on
/// cancellation, what is left is cancelled; `withRequestCoordinator` shuts down what it made.
@Suite("CoordinatorService and withRequestCoordinator")
struct CoordinatorServiceTests {
    static let logger = Logger(label: "courier.lifecycle.tests")

    @Test("graceful shutdown: loads in flight finish, new ones fail with shutDown, run() returns")
    func gracefulShutdownDrains() async throws {
        let server = try await TestServer.start()
        let service = CoordinatorService()
        let group = ServiceGroup(services: [service], logger: Self.logger)
        let running = Task { try await group.run() }
        let loads = (0..<3).map { index in
            Task {
                try await service.coordinator.send(
                    try HTTPRequest(method: .get, urlString: "\(server.baseURL)/gate?name=drain&i=\(index)"))
            }
        }
        #expect(await server.waitUntilHeld("drain", count: 3, timeout: .seconds(30)))
        await group.triggerGracefulShutdown()
        let refused = try await within(.seconds(30)) { await Self.firstRefusal(service.coordinator, server) }
        #expect(refused?.code == .shutDown)
        server.openGate("drain")
        for load in loads { #expect(try await load.value.head.status == .ok) }
        try await within(.seconds(30)) { try await running.value }
        await server.stop()
    }

    @Test("past the drain timeout, loads still in flight are cancelled and run() returns")
    func drainTimeoutCancels() async throws {
        let server = try await TestServer.start()
        var configuration = CoordinatorService.Configuration()
        configuration.drainTimeout = .milliseconds(200)
        let service = CoordinatorService(configuration: configuration)
        let group = ServiceGroup(services: [service], logger: Self.logger)
        let running = Task { try await group.run() }
        let load = Task {
            try await service.coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/gate?name=never"))
        }
        #expect(await server.waitUntilHeld("never", count: 1, timeout: .seconds(30)))
        let started = ContinuousClock.now
        await group.triggerGracefulShutdown()
        let error = await #expect(throws: ServiceError.self) { try await load.value }
        #expect(error?.code == .cancelled)
        try await within(.seconds(30)) { try await running.value }
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        await server.stop()
    }

    @Test("cancelling the service's task cancels loads in flight at once")
    func cancellationCancels() async throws {
        let server = try await TestServer.start()
        let service = CoordinatorService()
        let running = Task { try await service.run() }
        let load = Task {
            try await service.coordinator.send(
                try HTTPRequest(method: .get, urlString: "\(server.baseURL)/gate?name=held"))
        }
        #expect(await server.waitUntilHeld("held", count: 1, timeout: .seconds(30)))
        running.cancel()
        let error = await #expect(throws: ServiceError.self) { try await load.value }
        #expect(error?.code == .cancelled)
        try await within(.seconds(30)) { try await running.value }
        await server.stop()
    }

    @Test("withRequestCoordinator returns the body's value and shuts its coordinator down, also on error")
    func scopedCoordinator() async throws {
        let server = try await TestServer.start()
        let (status, kept) = try await withRequestCoordinator { coordinator in
            (
                try await coordinator.send(try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json")).head
                    .status, coordinator
            )
        }
        #expect(status == .ok)
        let error = await #expect(throws: ServiceError.self) {
            try await kept.send(try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json"))
        }
        #expect(error?.code == .shutDown)

        struct Failure: Error {}
        let escaped = LockedValue<RequestCoordinator?>(nil)
        await #expect(throws: Failure.self) {
            try await withRequestCoordinator { coordinator in
                escaped.withLock { $0 = coordinator }
                throw Failure()
            }
        }
        let afterError = await #expect(throws: ServiceError.self) {
            try await escaped.withLock { $0 }?.send(try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json"))
        }
        #expect(afterError?.code == .shutDown)
        await server.stop()
    }

    /// Sends loads until one is refused (the service has begun shutting down).
    static func firstRefusal(_ coordinator: RequestCoordinator, _ server: TestServer) async -> ServiceError? {
        while true {
            do {
                _ = try await coordinator.send(try HTTPRequest(method: .get, urlString: "\(server.baseURL)/json"))
                try? await Task.sleep(for: .milliseconds(10))
            } catch {
                return error
            }
        }
    }
}

struct TimedOut: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "did not finish within \(limit)" }
}

/// Runs `body`, failing with `TimedOut` when it takes longer than `limit`, so that a test that
/// goes wrong fails instead of hanging the run. A body that ignores cancellation is left
/// behind in its own task.
func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let settled = LockedValue(false)
    var tasks: [Task<Void, Never>] = []
    defer { for task in tasks { task.cancel() } }
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        @Sendable func settle(_ result: Result<T, any Error>) {
            let first = settled.withLock { settled in
                defer { settled = true }
                return !settled
            }
            if first { continuation.resume(with: result) }
        }
        tasks.append(
            Task {
                do { settle(.success(try await body())) } catch { settle(.failure(error)) }
            })
        tasks.append(
            Task {
                try? await Task.sleep(for: limit)
                settle(.failure(TimedOut(limit: limit)))
            })
    }
}
