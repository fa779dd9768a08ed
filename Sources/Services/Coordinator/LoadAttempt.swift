internal import CourierCore
internal import HTTPTypes
internal import Tracing

/// One attempt at sending a load's request: the request as sent, carrying the trace context,
/// and for a retry its own client span, a child of the load's.
///
/// The context is injected after the decorators ran and after the coalescing key was taken,
/// so loads from different traces still share a transfer, and the cache never sees it.
struct LoadAttempt {
    /// The request to send: `traceparent` (or whatever the tracer propagates) added.
    var request: HTTPRequest
    /// The retry's span (`nil` for the first attempt, which the load's span covers).
    var span: (any Span)?

    /// The attempt numbered `attempt` (from 1) at sending `request` for `telemetry`'s load.
    init(_ attempt: Int, of request: HTTPRequest, telemetry: LoadTelemetry?) {
        self.request = request
        guard let telemetry else { return }
        if attempt > 1 { telemetry.resending(attempt: attempt) }
        guard let loadSpan = telemetry.span else { return }
        var context = loadSpan.context
        if attempt > 1 {
            let span = telemetry.tracer.startSpan(request.method.rawValue, context: loadSpan.context, ofKind: .client)
            telemetry.describe(span)
            span.attributes["http.request.resend_count"] = attempt - 1
            context = span.context
            self.span = span
        }
        telemetry.tracer.inject(context, into: &self.request.headerFields, using: HTTPFieldsInjector())
    }

    /// Ends the retry's span with what the attempt produced.
    func end(_ outcome: Result<TransportResponse, ServiceError>) {
        guard let span else { return }
        switch outcome {
        case .success(let response):
            let status = response.head.status.code
            span.attributes["http.response.status_code"] = status
            if status >= 400 {
                span.attributes["error.type"] = String(status)
                span.setStatus(SpanStatus(code: .error))
            }
        case .failure(let error):
            span.attributes["error.type"] = error.code.description
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.code.description))
        }
        span.end()
    }
}

/// Writes a tracer's propagation fields (`traceparent`, `tracestate`, ...) into request headers.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
