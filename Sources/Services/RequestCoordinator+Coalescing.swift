internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// The identity of a transfer in flight.
enum FlightKey: Hashable, Sendable {
    /// A load that shares with nobody.
    case unique(UInt64)
    /// SHA-256 of method, URL, the headers that vary the response (credentials included,
    /// so two users never share), content type and body: the raw values are never kept.
    case shared([UInt8])

    static func digest(
        _ request: HTTPRequest, body: RequestBody?, ignoring: [HTTPField.Name], tag: String? = nil,
        partitions: [String] = []
    ) -> [UInt8]? {
        var hash = SHA256()
        if let tag { hash.update(field: "responder:" + tag) }
        for partition in partitions { hash.update(field: "partition:" + partition) }
        hash.update(field: request.method.rawValue)
        hash.update(field: request.scheme ?? "")
        hash.update(field: request.authority ?? "")
        hash.update(field: request.path ?? "/")
        for field in request.headerFields where !ignoring.contains(field.name) {
            hash.update(field: field.name.canonicalName)
            hash.update(field: field.value)
        }
        if let body {
            guard let bytes = body.inMemoryBytes else { return nil }
            hash.update(field: "body:" + (body.contentType ?? ""))
            hash.update(bytes)
        }
        return hash.finalize()
    }
}

/// One transfer in flight and the loads waiting for it. Actor-isolated to the coordinator.
final class Flight {
    /// Tells this flight from a later one with the same key.
    let serial: UInt64
    var waiters: [UInt64: CheckedContinuation<Result<Execution, ServiceError>, Never>] = [:]
    /// Loads that joined, including those that already left.
    var joined = 0
    var task: Task<Void, Never>?

    init(serial: UInt64) { self.serial = serial }
}

/// Decoded values shared by the waiters of one transfer, one per resource type: the first
/// waiter to ask decodes, the others await its result.
final class SharedDecodes: Sendable {
    private let values = LockedValue<[ObjectIdentifier: Task<any Sendable, any Error>]>([:])

    func value<T: Sendable>(
        for type: (some Resource).Type, decode: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let task = values.withLock { values in
            if let existing = values[ObjectIdentifier(type)] { return existing }
            let task = Task<any Sendable, any Error> { try decode() }
            values[ObjectIdentifier(type)] = task
            return task
        }
        // The stored task only ever produces a `T` for this resource type.
        return try await task.value as! T
    }
}

extension RequestCoordinator {
    /// Waits for the transfer `key` identifies, starting it with `start` when none is in flight.
    /// A waiter that is cancelled gets `cancelled` at once; the transfer is cancelled when its
    /// last waiter leaves.
    func join(
        key: FlightKey, waiter id: UInt64, rejectsDuplicates: Bool,
        start: @escaping @Sendable () async -> Result<TransportResponse, ServiceError>
    ) async -> Result<Execution, ServiceError> {
        if isShutDown { return .failure(ServiceError(.shutDown, "The coordinator was shut down.")) }
        let flight: Flight
        let coalesced: Bool
        if let existing = flights[key] {
            if rejectsDuplicates {
                return .failure(
                    ServiceError(.redundantRequest, "An identical request is in flight and duplicates are rejected."))
            }
            flight = existing
            coalesced = true
            events.emit(id, .coalesced)
        } else {
            flight = Flight(serial: id)
            coalesced = false
            flights[key] = flight
            activeTransfers += 1
            flight.task = Self.startTransfer(on: self, key: key, serial: id, start)
        }
        flight.joined += 1
        let serial = flight.serial
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Execution, ServiceError>, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: .failure(.cancelled()))
                    if flight.waiters.isEmpty { cancel(key: key, serial: flight.serial) }
                    return
                }
                flight.waiters[id] = continuation
            }
        } onCancel: {
            Task { await self.leave(key: key, serial: serial, waiter: id) }
        }
        return result.map { output in
            Execution(response: output.response, sharedDecodes: output.sharedDecodes, wasCoalesced: coalesced)
        }
    }

    /// Starts the task that drives one transfer. Created outside the actor's isolation so the
    /// transfer begins on the global executor instead of queueing on the coordinator first.
    private nonisolated static func startTransfer(
        on coordinator: RequestCoordinator, key: FlightKey, serial: UInt64,
        _ start: @escaping @Sendable () async -> Result<TransportResponse, ServiceError>
    ) -> Task<Void, Never> {
        Task {
            let result = await start()
            await coordinator.land(key: key, serial: serial, result: result)
        }
    }

    /// Runs `work` in a task of its own that shutdown waits for (never once shut down).
    nonisolated static func startBackground(
        on coordinator: RequestCoordinator, _ work: @escaping @Sendable (RequestCoordinator) async -> Void
    ) {
        Task {
            guard await coordinator.beginBackgroundWork() else { return }
            await work(coordinator)
            await coordinator.endBackgroundWork()
        }
    }

    private func beginBackgroundWork() -> Bool {
        guard !isShutDown else { return false }
        activeTransfers += 1
        return true
    }

    private func endBackgroundWork() {
        activeTransfers -= 1
        resumeDrainWaitersIfIdle()
    }

    private func resumeDrainWaitersIfIdle() {
        guard activeTransfers == 0 else { return }
        let drained = drainWaiters
        drainWaiters = []
        for waiter in drained { waiter.resume() }
    }

    /// Hands the transfer's result to every waiter.
    private func land(key: FlightKey, serial: UInt64, result: Result<TransportResponse, ServiceError>) {
        activeTransfers -= 1
        if let flight = flights[key], flight.serial == serial {
            flights[key] = nil
            let shared = flight.joined > 1 ? SharedDecodes() : nil
            let output = result.map { Execution(response: $0, sharedDecodes: shared, wasCoalesced: false) }
            let waiters = flight.waiters
            flight.waiters = [:]
            for continuation in waiters.values { continuation.resume(returning: output) }
        }
        resumeDrainWaitersIfIdle()
    }

    /// A cancelled waiter leaves; the last one out cancels the transfer.
    private func leave(key: FlightKey, serial: UInt64, waiter id: UInt64) {
        guard let flight = flights[key], flight.serial == serial,
            let continuation = flight.waiters.removeValue(forKey: id)
        else { return }
        continuation.resume(returning: .failure(.cancelled()))
        if flight.waiters.isEmpty { cancel(key: key, serial: serial) }
    }

    /// Cancels a transfer and fails whoever still waits for it.
    func cancel(key: FlightKey, serial: UInt64) {
        guard let flight = flights[key], flight.serial == serial else { return }
        flights[key] = nil
        flight.task?.cancel()
        let waiters = flight.waiters
        flight.waiters = [:]
        for continuation in waiters.values { continuation.resume(returning: .failure(.cancelled())) }
    }

    /// Loads waiting for transfers right now (shared ones and solo ones).
    var waiterCount: Int { flights.values.reduce(0) { $0 + $1.waiters.count } + solo.count }

    /// Returns once at least `count` loads wait for transfers (a test hook). Solo transfers
    /// start without the actor, so this checks every millisecond.
    func waitForWaiters(_ count: Int) async {
        while waiterCount < count { try? await Task.sleep(for: .milliseconds(1)) }
    }
}
