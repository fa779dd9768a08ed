internal import CourierTransport
public import Logging

/// A `RequestCoordinator` and the `CurlTransport` under it, run as a `Service` of a
/// swift-service-lifecycle `ServiceGroup`.
///
/// `run()` waits for the group's graceful shutdown, then stops taking loads (later ones fail
/// with `shutDown`), lets those in flight finish, and shuts the transport down. Loads still in
/// flight after ``Configuration/drainTimeout`` are cancelled (they fail with `cancelled`), so
/// `run()` returns within the timeout plus the time curl takes to close. Cancelling the
/// service's task (the group's fast shutdown) cancels in-flight loads at once.
///
/// ```swift
/// let courier = CoordinatorService()
/// let group = ServiceGroup(services: [courier, server], gracefulShutdownSignals: [.sigterm], logger: logger)
/// // handlers call `try await SomeResource().load(using: courier.coordinator)`
/// try await group.run()
/// ```
public struct CoordinatorService: Service {
    /// Settings of the service; every property has a production default.
    public struct Configuration: Sendable {
        /// What the coordinator does for every load.
        public var coordinator = RequestCoordinator.Configuration()
        /// The transport's settings.
        public var transport = CurlTransport.Configuration()
        /// How long graceful shutdown waits for loads in flight before cancelling them.
        /// 30 s by default.
        public var drainTimeout: Duration = .seconds(30)

        /// Creates the default configuration.
        public init() {}
    }

    /// The coordinator to load through. Valid until `run()` returns.
    public let coordinator: RequestCoordinator
    /// The transport the service owns and shuts down.
    let transport: CurlTransport
    /// How long graceful shutdown waits for loads in flight.
    public let drainTimeout: Duration

    /// Creates a coordinator over a new `CurlTransport`, both owned by this service.
    public init(configuration: Configuration = Configuration(), backgroundLogger: Logger? = nil) {
        transport = CurlTransport(configuration: configuration.transport, backgroundLogger: backgroundLogger)
        coordinator = RequestCoordinator(
            transport: transport, configuration: configuration.coordinator, backgroundLogger: backgroundLogger)
        drainTimeout = configuration.drainTimeout
    }

    /// Waits for graceful shutdown (or cancellation), then drains and shuts down.
    public func run() async throws {
        let cancelled: Bool
        do {
            try await gracefulShutdown()
            cancelled = false
        } catch {
            cancelled = true  // the group is shutting down fast: cancel what is in flight
        }
        await coordinator.shutdown(within: cancelled ? .zero : drainTimeout)
        await transport.shutdown(cancellingInFlight: true)
    }
}
