internal import CourierCore
internal import HTTPTypes
public import Logging

extension RequestCoordinator {
    /// Opens `resource` as a stream of server-sent events (`text/event-stream`), reconnecting
    /// as `reconnection` allows; see ``EventStream``.
    ///
    /// ```swift
    /// struct Completions: Resource {
    ///     typealias Response = Void
    ///     var prompt: String
    ///     var endpoint: Endpoint { Endpoint("https://llm.example.com", path: "/v1/completions") }
    ///     var method: HTTPRequest.Method { .post }
    ///     var body: RequestBody? { get throws { try .json(["prompt": prompt, "stream": "true"]) } }
    /// }
    ///
    /// for try await event in coordinator.events(Completions(prompt: "Hello"), reconnection: .never) {
    ///     print(try event.decode(Token.self).text, terminator: "")
    /// }
    /// ```
    ///
    /// Nothing is sent until the sequence is iterated. The resource's `Accept` field, if it
    /// has none, becomes `text/event-stream`.
    public nonisolated func events<R: Resource>(
        _ resource: R, reconnection: EventStream.Reconnection = .standard, logger: Logger? = nil
    ) -> EventStream {
        EventStream(reconnection: reconnection, clock: configuration.clock, logger: logger ?? backgroundLogger) {
            [self] lastEventID in
            var plan = LoadPlan(resource: resource, coordinator: self, logger: logger)
            var request = plan.request
            if request.headerFields[.accept] == nil { request.headerFields[.accept] = "text/event-stream" }
            request.headerFields[.cacheControl] = "no-cache"
            if !lastEventID.isEmpty { request.headerFields[.lastEventID] = lastEventID }
            plan.request = request
            return try await stream(resource, plan: plan, endless: true)
        }
    }
}

extension Resource {
    /// This resource's response as a stream of server-sent events on `coordinator`; see
    /// ``RequestCoordinator/events(_:reconnection:logger:)``.
    public func events(
        using coordinator: RequestCoordinator = .current, reconnection: EventStream.Reconnection = .standard,
        logger: Logger? = nil
    ) -> EventStream {
        coordinator.events(self, reconnection: reconnection, logger: logger)
    }
}

extension HTTPField.Name {
    /// The event stream's last event ID, sent when a stream connects again.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}
