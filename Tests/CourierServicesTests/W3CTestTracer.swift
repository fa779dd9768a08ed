import CourierCore
import InMemoryTracing
import Tracing

/// An `InMemoryTracer` that propagates its context as a W3C `traceparent`, as OpenTelemetry's
/// tracers do (the in-memory tracer alone writes `in-memory-trace-id` fields).
struct W3CTestTracer: Tracer {
    typealias Span = InMemorySpan

    let recorder = InMemoryTracer(idGenerator: Self.hexIDs())

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        recorder.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID,
            line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject(Self.traceparent(span), forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Carrier == Extract.Carrier {}

    /// Spans that ended, oldest first.
    var finishedSpans: [FinishedInMemorySpan] { recorder.finishedSpans }

    /// Finished client spans: Courier's load and retry spans.
    var clientSpans: [FinishedInMemorySpan] { finishedSpans.filter { $0.kind == .client } }

    /// The `traceparent` value a span propagates.
    static func traceparent(_ span: InMemorySpanContext) -> String { "00-\(span.traceID)-\(span.spanID)-01" }

    /// Incrementing ids in W3C's widths (32 and 16 hex digits).
    private static func hexIDs() -> InMemoryTracer.IDGenerator {
        let counter = LockedValue(0)
        @Sendable func next(width: Int) -> String {
            let value = counter.withLock {
                $0 += 1
                return $0
            }
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: width - hex.count) + hex
        }
        return .init(nextTraceID: { next(width: 32) }, nextSpanID: { next(width: 16) })
    }
}
