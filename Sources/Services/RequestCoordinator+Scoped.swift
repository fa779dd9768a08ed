public import CourierTransport

extension RequestCoordinator {
    /// Stops taking loads and waits up to `timeout` for those in flight, then cancels the rest
    /// and waits for them to end. Cancelling the calling task cancels them at once.
    public static func drain(_ coordinator: RequestCoordinator, within timeout: Duration) async {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await coordinator.shutdown() }
                group.addTask {
                    do { try await Task.sleep(for: timeout) } catch { return }
                    await coordinator.shutdown(cancellingInFlight: true)
                }
                await group.next()
                group.cancelAll()
            }
        } onCancel: {
            Task { await coordinator.shutdown(cancellingInFlight: true) }
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
        await RequestCoordinator.drain(coordinator, within: drainTimeout)
        await transport.shutdown(cancellingInFlight: true)
        throw error
    }
    await RequestCoordinator.drain(coordinator, within: drainTimeout)
    await transport.shutdown(cancellingInFlight: true)
    return value
}
