internal import HTTPTypes
internal import Logging

/// What a load reports when it starts, lands and fails: events, debug logs, telemetry.
///
/// Synchronous on purpose: a temporary of an async function that lives across an `await` takes
/// room in the task's frame for the whole transfer; here it takes room on the thread's stack,
/// for a moment.
extension RequestCoordinator {
    /// Reports a load that starts, and returns its telemetry (nil when nothing records).
    @inline(never)
    nonisolated func started(_ plan: LoadPlan, background: Bool) -> LoadTelemetry? {
        events.emit(plan.id, .started(method: plan.request.method, url: plan.loggableURL))
        plan.logger?.debug(
            "load started", metadata: ["courier.http.method": "\(plan.request.method)", "courier.url": "\(plan.loggableURL)"])
        return LoadTelemetry.start(plan, configuration: configuration, background: background)
    }

    /// Reports a load that produced a value from `execution`.
    @inline(never)
    nonisolated func finished(_ plan: LoadPlan, execution: Execution, telemetry: LoadTelemetry?) {
        telemetry?.finished(execution, duration: ContinuousClock.now - plan.started)
        // The clock is read only when someone listens.
        events.emit(
            plan.id,
            .finished(
                status: execution.response.head.status, metrics: execution.response.metrics,
                duration: ContinuousClock.now - plan.started))
        plan.logger?.debug(
            "load finished",
            metadata: [
                "courier.http.status": "\(execution.response.head.status.code)",
                "courier.duration": "\(ContinuousClock.now - plan.started)",
                "courier.coalesced": "\(execution.wasCoalesced)", "courier.source": "\(execution.source)",
            ])
    }

    /// Reports a load that failed with `error`, and returns it as a `ServiceError`.
    @inline(never)
    nonisolated func failed(_ plan: LoadPlan, error: any Error, telemetry: LoadTelemetry?) -> ServiceError {
        let error = ServiceError.wrapping(error)
        let duration = ContinuousClock.now - plan.started
        let status = error.status?.code
        telemetry?.failed(error, status: status, duration: duration)
        events.emit(plan.id, .failed(code: error.code, status: error.status, duration: duration))
        // Debug, not info: the caller gets the error; a 404 is not an incident.
        plan.logger?.debug(
            "load failed", metadata: ["courier.error.code": "\(error.code)", "courier.error.message": "\(error.message)"])
        return error
    }
}
