public import CourierTransport

extension RequestCoordinator {
    /// Stops taking loads (later ones fail with `shutDown`) and waits up to `timeout` for those
    /// in flight, then cancels the rest and waits for them to end. Cancelling the calling task
    /// cancels them at once. Does not shut the transport down: its owner does.
    ///
    /// ```swift
    /// await coordinator.shutdown(within: .seconds(30))
    /// await transport.shutdown()
    /// ```
    public nonisolated func shutdown(within timeout: Duration) async {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.shutdown() }
                group.addTask {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    await self.shutdown(cancellingInFlight: true)
                }
                await group.next()
                group.cancelAll()
            }
        } onCancel: {
            Task { await self.shutdown(cancellingInFlight: true) }
        }
    }
}

/// Runs `body` with a new coordinator over a new `CurlTransport`, then shuts both down, also
/// when `body` throws: loads still in flight get `drainTimeout` (10 s by default) to finish
/// before they are cancelled.
///
/// ```swift
/// let user = try await withRequestCoordinator { coordinator in
///     try await UserService(id: 7).load(using: coordinator)
/// }
/// ```
public func withRequestCoordinator<T>(
    configuration: RequestCoordinator.Configuration = RequestCoordinator.Configuration(),
    transportConfiguration: CurlTransport.Configuration = CurlTransport.Configuration(),
    drainTimeout: Duration = .seconds(10),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (RequestCoordinator) async throws -> sending T
) async throws -> sending T {
    let transport = CurlTransport(configuration: transportConfiguration)
    let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
    let value: T
    do {
        value = try await body(coordinator)
    } catch {
        await coordinator.shutdown(within: drainTimeout)
        await transport.shutdown(cancellingInFlight: true)
        throw error
    }
    await coordinator.shutdown(within: drainTimeout)
    await transport.shutdown(cancellingInFlight: true)
    return value
}
