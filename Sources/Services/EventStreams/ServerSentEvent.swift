internal import FoundationEssentials

/// One event of a `text/event-stream` response, as the HTML standard's event stream
/// interpretation dispatches it: what ``EventStream`` yields.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: its `event` field, or `message` when it had none.
    public var event: String
    /// Its `data` fields, joined with line feeds.
    public var data: String
    /// The stream's last event ID when the event was dispatched: set by an `id` field, in this
    /// event or an earlier one, and sent back as `Last-Event-ID` on reconnection.
    public var id: String
    /// The reconnection time a `retry` field in this event's block set, if any.
    public var retry: Duration?

    /// An event, as a test double or a replay would make one.
    public init(event: String = "message", data: String, id: String = "", retry: Duration? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }

    /// Decodes ``data`` as JSON into `type`, with Courier's decoder unless you pass another
    /// (a resource's ``Resource/jsonDecoder``, say).
    ///
    /// ```swift
    /// for try await event in Completions(prompt: "Hello").events() where event.event == "token" {
    ///     print(try event.decode(Token.self).text, terminator: "")
    /// }
    /// ```
    ///
    /// - Throws: `ServiceError` with code `decodingFailed`, naming the coding path; the stream
    ///   itself goes on.
    public func decode<T: Decodable>(
        _ type: T.Type = T.self, using decoder: any JSONBodyDecoder = CourierJSONDecoder()
    ) throws -> T {
        do {
            return try decoder.decode(T.self, from: Data(data.utf8), atKeyPath: [])
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(
                .decodingFailed, "The event's data could not be decoded: \(JSONDecoding.detail(of: error)).",
                underlying: error)
        }
    }
}
