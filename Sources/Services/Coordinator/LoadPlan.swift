internal import FoundationEssentials
internal import HTTPTypes
internal import Logging

/// Everything one load needs, computed before it starts and outside the coordinator's isolation.
///
/// Its fields live in one box shared by every copy (copied on write, as ``Execution``'s; only
/// the set-up writes): each async frame of a load holds the plan for the whole transfer, and a
/// pointer there is a fraction of every field (a few hundred bytes per frame, per load in
/// flight); copying it retains one object rather than each field.
struct LoadPlan: Sendable {
    /// Invariant that makes it Sendable: `fields` is written only through `update`, which first
    /// copies a box that any other plan shares, so a box another plan or thread can see is
    /// never written.
    private final class Box: @unchecked Sendable {
        var fields: LoadPlanFields
        init(_ fields: LoadPlanFields) { self.fields = fields }
    }

    private var box: Box

    /// A plan for `resource`; its request is built from the endpoint unless `prepared` gives it
    /// (a one-off load, whose request was made and checked by the caller).
    init<R: Resource>(
        resource: R, request prepared: HTTPRequest? = nil, coordinator: RequestCoordinator, logger: Logger?
    ) {
        box = Box(LoadPlanFields(resource: resource, request: prepared, coordinator: coordinator, logger: logger))
    }

    init(request: HTTPRequest, body: RequestBody?, coordinator: RequestCoordinator, logger: Logger?) {
        box = Box(LoadPlanFields(request: request, body: body, coordinator: coordinator, logger: logger))
    }

    private mutating func update(_ change: (inout LoadPlanFields) -> Void) {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        change(&box.fields)
    }

    var id: UInt64 {
        get { box.fields.id }
        set { update { $0.id = newValue } }
    }
    var request: HTTPRequest {
        get { box.fields.request }
        set { update { $0.request = newValue } }
    }
    var body: RequestBody? { box.fields.body }
    var options: TransferOptions {
        get { box.fields.options }
        set { update { $0.options = newValue } }
    }
    var decorators: [any RequestDecorator] {
        get { box.fields.decorators }
        set { update { $0.decorators = newValue } }
    }
    var observers: [any ResponseObservingDecorator] { box.fields.observers }
    var retryPolicy: RetryPolicy { box.fields.retryPolicy }
    var hedging: Hedging? { box.fields.hedging }
    var coalescing: Coalescing.Mode {
        get { box.fields.coalescing }
        set { update { $0.coalescing = newValue } }
    }
    var cachePolicy: CachePolicy {
        get { box.fields.cachePolicy }
        set { update { $0.cachePolicy = newValue } }
    }
    var cacheableStatus: CacheableStatus { box.fields.cacheableStatus }
    var stub: Stub? { box.fields.stub }
    var receiver: (any ResponseReceiver)? {
        get { box.fields.receiver }
        set { update { $0.receiver = newValue } }
    }
    var logger: Logger? {
        get { box.fields.logger }
        set { update { $0.logger = newValue } }
    }
    var operation: String? {
        get { box.fields.operation }
        set { update { $0.operation = newValue } }
    }
    var buildError: ServiceError? { box.fields.buildError }
    /// The resource's backend, read once from its endpoint (building an endpoint costs more than
    /// reading a field; ``RequestCoordinator/finish(_:plan:execution:)`` needs it again).
    var backend: (any Backend)? { box.fields.backend }
    /// The total timeout of the transfer's retries, when its first attempt has less (what
    /// waiting for its turn at its host left); nil otherwise.
    var retryTimeout: Duration?? {
        get { box.fields.retryTimeout }
        set { update { $0.retryTimeout = newValue } }
    }
    var started: ContinuousClock.Instant { box.fields.started }
    /// When the load must end: the task's ``Deadline``, or the coordinator's load budget when
    /// that comes first. Downloads and streamed loads (a receiver), uploads, and loads whose
    /// body is read from a file or a stream have no budget: their size sets their length.
    var deadline: Moment? {
        guard box.fields.receiver == nil, box.fields.body?.isInMemory ?? true, let budget = box.fields.budgetDeadline
        else { return box.fields.taskDeadline }
        guard let task = box.fields.taskDeadline else { return budget }
        return min(task, budget)
    }
    /// When the coordinator's load budget runs out (nil: the load has none).
    var budgetDeadline: Moment? {
        get { box.fields.budgetDeadline }
        set { update { $0.budgetDeadline = newValue } }
    }
    /// The task's ``Deadline``, read when the plan was made.
    var taskDeadline: Moment? {
        get { box.fields.taskDeadline }
        set { update { $0.taskDeadline = newValue } }
    }
    var loggableURL: String { box.fields.loggableURL }

    /// A responder bound to one resource.
    struct Stub: Sendable {
        /// Tells apart resource types that share a URL, so they never share a transfer.
        var tag: String
        var respond: @Sendable (HTTPRequest) async throws -> TransportResponse
    }

    /// `base` with the load's `courier.request.id`.
    static func logger(_ base: Logger?, id: UInt64) -> Logger? {
        guard var logger = base else { return nil }
        logger[metadataKey: "courier.request.id"] = "\(id)"
        return logger
    }
}

/// A plan's fields, in ``LoadPlan``'s box.
private struct LoadPlanFields: Sendable {
    var id: UInt64
    var request: HTTPRequest
    var body: RequestBody?
    var options: TransferOptions
    var decorators: [any RequestDecorator] {
        didSet { observers = Self.observers(in: decorators) }
    }
    /// The decorators that observe responses (and may partition coalescing), found once per
    /// load rather than cast at every attempt.
    private(set) var observers: [any ResponseObservingDecorator] = []
    var retryPolicy: RetryPolicy
    /// The resource's hedging, or the coordinator's (``Hedging``).
    var hedging: Hedging?
    var coalescing: Coalescing.Mode
    var cachePolicy: CachePolicy = .networkOnly
    /// Which statuses the resource does not accept may still be stored.
    var cacheableStatus: CacheableStatus = .accepted
    /// Answers in place of the transport (the configuration's ``ResourceResponder``).
    var stub: LoadPlan.Stub?
    /// Receives the response in place of `send` (a download, a streamed load); such a load
    /// never shares its transfer and skips the cache.
    var receiver: (any ResponseReceiver)?
    var logger: Logger?
    /// The operation this load performs (an OpenAPI operation ID), carried by its events and span.
    var operation: String?
    /// Set when the resource could not be turned into a request; reported once the load began.
    var buildError: ServiceError?
    var backend: (any Backend)?
    var retryTimeout: Duration?? = nil
    let started = ContinuousClock.now
    /// ``Deadline/current`` when the plan was made.
    var taskDeadline = Deadline.storage.map(Moment.init)
    /// When the coordinator's ``RequestCoordinator/Configuration/loadBudget`` runs out.
    var budgetDeadline: Moment?

    init<R: Resource>(resource: R, request prepared: HTTPRequest?, coordinator: RequestCoordinator, logger: Logger?) {
        // The configuration's fields are read one by one: a copy of the whole configuration
        // retains and releases every field of it.
        id = coordinator.events.makeRequestID()
        options = coordinator.configuration.transferOptions
        if let budget = coordinator.configuration.loadBudget { budgetDeadline = Moment(started) + budget }
        if let timeout = resource.timeout { options.timeout = timeout }
        if let idle = resource.idleTimeout { options.idleTimeout = idle }
        let endpoint = resource.endpoint
        let backend = endpoint.backend
        self.backend = backend
        decorators = Self.decorators(
            coordinator.configuration.decorators, backend?.decorators ?? [], resource.decorators)
        observers = Self.observers(in: decorators)
        retryPolicy = resource.retryPolicy ?? coordinator.configuration.retryPolicy
        hedging = resource.hedging ?? coordinator.configuration.hedging
        cachePolicy = resource.cachePolicy
        cacheableStatus = resource.cacheableStatus
        if let responder = coordinator.configuration.responder {
            stub = LoadPlan.Stub(tag: String(reflecting: R.self)) { request in
                try await responder.response(for: resource, request: request)
            }
        }
        coalescing = coordinator.configuration.coalescesDuplicateLoads ? resource.coalescing.mode : .never
        if coalescing == .automatic {
            coalescing = resource.method == .get || resource.method == .head ? .always : .never
        }
        self.logger = LoadPlan.logger(logger ?? coordinator.backgroundLogger, id: id)
        if let planLogger = self.logger { options.logger = planLogger }  // the transport logs to the load's logger
        do {
            if let prepared {
                request = prepared
                body = try resource.body
                return
            }
            let parts: (scheme: String, authority: String, path: String)
            if let backend {
                let environment =
                    coordinator.configuration.environments[backend.id] ?? coordinator.configuration.environment
                parts = try endpoint.resolved(in: environment).components()
            } else {
                parts = try endpoint.components()
            }
            var fields = backend?.headers ?? [:]
            let own = resource.headers
            if !own.isEmpty {
                if fields.isEmpty {
                    fields = own
                } else {
                    for name in Set(own.map(\.name)) { fields[values: name] = [] }
                    fields.append(contentsOf: own)
                }
            }
            request = HTTPRequest(
                method: resource.method, scheme: parts.scheme, authority: parts.authority, path: parts.path,
                headerFields: fields)
            body = try resource.body
        } catch {
            // Never sent: the load reports `buildError` once it began.
            request = HTTPRequest(method: resource.method, scheme: "http", authority: "invalid", path: "/")
            buildError = Self.buildFailure(error)
        }
    }

    /// The coordinator's, the backend's and the resource's decorators, in that order; no new
    /// array when at most one of them has any.
    private static func decorators(
        _ coordinator: [any RequestDecorator], _ backend: [any RequestDecorator], _ resource: [any RequestDecorator]
    ) -> [any RequestDecorator] {
        if coordinator.isEmpty && backend.isEmpty { return resource }
        if backend.isEmpty && resource.isEmpty { return coordinator }
        return coordinator + backend + resource
    }

    init(request: HTTPRequest, body: RequestBody?, coordinator: RequestCoordinator, logger: Logger?) {
        id = coordinator.events.makeRequestID()
        self.request = request
        self.body = body
        options = coordinator.configuration.transferOptions
        if let budget = coordinator.configuration.loadBudget { budgetDeadline = Moment(started) + budget }
        decorators = coordinator.configuration.decorators
        observers = Self.observers(in: decorators)
        retryPolicy = coordinator.configuration.retryPolicy
        hedging = coordinator.configuration.hedging
        let safe = request.method == .get || request.method == .head
        coalescing = coordinator.configuration.coalescesDuplicateLoads && safe ? .always : .never
        self.logger = LoadPlan.logger(logger ?? coordinator.backgroundLogger, id: id)
        if let planLogger = self.logger { options.logger = planLogger }  // the transport logs to the load's logger
    }

    /// The URL without its query, safe to log.
    var loggableURL: String {
        let path = request.path ?? "/"
        let pathOnly = path.firstIndex(of: "?").map { path[..<$0] } ?? path[...]
        return "\(request.scheme ?? "")://\(request.authority ?? "")\(pathOnly)"
    }

    private static func observers(in decorators: [any RequestDecorator]) -> [any ResponseObservingDecorator] {
        decorators.isEmpty ? [] : decorators.compactMap { $0 as? any ResponseObservingDecorator }
    }

    private static func buildFailure(_ error: any Error) -> ServiceError {
        if let error = error as? ServiceError { return error }
        return ServiceError(.encodingFailed, "The request body could not be built: \(error)", underlying: error)
    }
}

/// What a transfer (or the cache) gave one load.
extension Execution {
    /// A stored response standing in for a transfer, with an `Age` field generated from its
    /// current age at `now` (RFC 9111, section 5.1).
    static func cached(
        _ stored: CachedResponse, source: ResponseSource, now: Date, metrics: TransferMetrics = TransferMetrics(),
        isStale: Bool = false, networkError: ServiceError? = nil
    ) -> Execution {
        let age = HTTPCacheRules.currentAge(of: stored, now: now)
        var head = stored.head
        head.headerFields[.age] = String(Int(min(age, 2_147_483_648).rounded(.down)))
        return Execution(
            response: TransportResponse(head: head, body: stored.body, metrics: metrics), sharedDecodes: nil,
            wasCoalesced: false, request: nil, source: source, isStale: isStale, networkError: networkError,
            age: .seconds(age), storedAt: stored.responseTime)
    }
}
