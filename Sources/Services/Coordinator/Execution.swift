internal import FoundationEssentials
internal import HTTPTypes

/// What a transfer (or the cache) gave one load.
///
/// Its fields live in one shared box (copied on write): an execution is held, copied and
/// wrapped in `Result` across the `await`s of a load, and each inline copy of several hundred
/// bytes would take that room in the task's frame for the whole transfer.
struct Execution: Sendable {
    struct Fields: Sendable {
        var response: TransportResponse
        /// Decoded values shared by the waiters of one transfer (nil when it had one waiter).
        var sharedDecodes: SharedDecodes?
        var wasCoalesced: Bool
        /// The request as sent, decorated (nil when the cache answered without a request).
        var request: HTTPRequest?
        var source: ResponseSource
        var isStale: Bool
        var networkError: ServiceError?
        /// The stored response's current age and arrival, when the cache answered.
        var age: Duration?
        var storedAt: Date?
    }

    /// Invariant that makes it Sendable: `fields` is only written through `Execution`'s
    /// setters, and only when this box is uniquely referenced (copy on write), so a box another
    /// value or thread can see is never written.
    private final class Box: @unchecked Sendable {
        var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    init(
        response: TransportResponse, sharedDecodes: SharedDecodes?, wasCoalesced: Bool, request: HTTPRequest? = nil,
        source: ResponseSource = .network, isStale: Bool = false, networkError: ServiceError? = nil,
        age: Duration? = nil, storedAt: Date? = nil
    ) {
        box = Box(
            Fields(
                response: response, sharedDecodes: sharedDecodes, wasCoalesced: wasCoalesced, request: request,
                source: source, isStale: isStale, networkError: networkError, age: age, storedAt: storedAt))
    }

    private mutating func update(_ change: (inout Fields) -> Void) {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        change(&box.fields)
    }

    var response: TransportResponse {
        get { box.fields.response }
        set { update { $0.response = newValue } }
    }
    var sharedDecodes: SharedDecodes? {
        get { box.fields.sharedDecodes }
        set { update { $0.sharedDecodes = newValue } }
    }
    var wasCoalesced: Bool {
        get { box.fields.wasCoalesced }
        set { update { $0.wasCoalesced = newValue } }
    }
    var request: HTTPRequest? {
        get { box.fields.request }
        set { update { $0.request = newValue } }
    }
    var source: ResponseSource {
        get { box.fields.source }
        set { update { $0.source = newValue } }
    }
    var isStale: Bool {
        get { box.fields.isStale }
        set { update { $0.isStale = newValue } }
    }
    var networkError: ServiceError? {
        get { box.fields.networkError }
        set { update { $0.networkError = newValue } }
    }
    var age: Duration? {
        get { box.fields.age }
        set { update { $0.age = newValue } }
    }
    var storedAt: Date? {
        get { box.fields.storedAt }
        set { update { $0.storedAt = newValue } }
    }
}
