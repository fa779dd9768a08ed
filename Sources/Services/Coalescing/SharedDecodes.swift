internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

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
