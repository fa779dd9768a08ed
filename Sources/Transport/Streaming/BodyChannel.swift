internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// The hand-off between the loop thread (producer) and one consumer task for a streamed
/// body, with backpressure: above `highWater` buffered bytes the producer is told to pause
/// the transfer; once the consumer drains to `lowWater` it asks the loop to resume it.
final class BodyChannel: Sendable {
    enum Offer { case accepted, pause, closed }

    private struct State {
        var chunks: [Data] = []
        var head = 0
        var buffered = 0
        var paused = false
        var consumerGone = false
        var end: Result<TransferMetrics, ServiceError>?
        var trailers = HTTPFields()
        /// Whether the consumer read the end and found the body whole (its decoder, if any,
        /// finished): only then does ``trailers`` show them.
        var endAccepted = false
        var waiter: CheckedContinuation<Data?, any Error>?
        var highWaterMark = 0
    }

    private let state = LockedValue(State())
    let highWater: Int
    let lowWater: Int
    /// Asks the loop to resume a paused transfer; called from the consumer.
    private let resume: @Sendable () -> Void
    /// Asks the loop to stop the transfer; called when the consumer goes away.
    private let cancel: @Sendable () -> Void

    init(highWater: Int, resume: @escaping @Sendable () -> Void, cancel: @escaping @Sendable () -> Void) {
        self.highWater = highWater
        self.lowWater = highWater / 4
        self.resume = resume
        self.cancel = cancel
    }

    /// The most bytes ever buffered at once (tests read it to prove bounded memory).
    var bufferedHighWaterMark: Int { state.withLock { $0.highWaterMark } }
    /// Whether the producer paused the transfer and waits for the consumer (tests read it).
    var isPaused: Bool { state.withLock { $0.paused } }

    // MARK: producer (loop thread)

    func offer(_ bytes: UnsafeRawBufferPointer) -> Offer {
        enum Action {
            case deliver(CheckedContinuation<Data?, any Error>)
            case none
        }
        var action = Action.none
        let offer: Offer = state.withLock { state in
            if state.consumerGone { return .closed }
            if let waiter = state.waiter {
                state.waiter = nil
                action = .deliver(waiter)
                return .accepted
            }
            if state.buffered >= highWater {
                state.paused = true
                return .pause
            }
            state.chunks.append(Data(bytes))
            state.buffered += bytes.count
            state.highWaterMark = max(state.highWaterMark, state.buffered)
            return .accepted
        }
        if case .deliver(let waiter) = action { waiter.resume(returning: Data(bytes)) }
        return offer
    }

    /// The transfer ended: with its metrics and the response's trailer fields, or a failure.
    func finish(_ end: Result<TransferMetrics, ServiceError>, trailers: HTTPFields = HTTPFields()) {
        let waiter: CheckedContinuation<Data?, any Error>? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = end
            state.trailers = trailers
            defer { state.waiter = nil }
            return state.waiter
        }
        guard let waiter else { return }
        switch end {
        case .success: waiter.resume(returning: nil)
        case .failure(let error): waiter.resume(throwing: error)
        }
    }

    /// The response's trailer fields once the consumer has accepted the end of a transfer that
    /// ended well (empty when it sent none); `nil` before, or after a failure.
    var trailers: HTTPFields? {
        state.withLock { state in
            guard state.endAccepted, case .success = state.end else { return nil }
            return state.trailers
        }
    }

    // MARK: consumer

    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                enum Outcome {
                    case value(Data?)
                    case failure(ServiceError)
                    case wait
                }
                var wakeLoop = false
                let outcome: Outcome = state.withLock { state in
                    if state.consumerGone { return .failure(.cancelled()) }
                    if state.head < state.chunks.count {
                        let chunk = state.chunks[state.head]
                        state.head += 1
                        if state.head == state.chunks.count {
                            state.chunks.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        state.buffered -= chunk.count
                        if state.paused && state.buffered <= lowWater {
                            state.paused = false
                            wakeLoop = true
                        }
                        return .value(chunk)
                    }
                    switch state.end {
                    case .success: return .value(nil)
                    case .failure(let error): return .failure(error)
                    case nil:
                        if state.paused {
                            state.paused = false
                            wakeLoop = true
                        }
                        state.waiter = continuation
                        return .wait
                    }
                }
                if wakeLoop { resume() }
                switch outcome {
                case .value(let chunk): continuation.resume(returning: chunk)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            close()
        }
    }

    /// The consumer read the end and found the body whole (its decoder finished): from now on
    /// ``trailers`` shows them. A body that fails at its end (a truncated gzip stream) never
    /// shows its trailers, and nobody sees them before the decoder has had its say.
    func acceptEnd() {
        state.withLock { $0.endAccepted = true }
    }

    /// The consumer stopped reading: fail a pending read and stop the transfer.
    func close() {
        let waiter: CheckedContinuation<Data?, any Error>?? = state.withLock { state in
            guard !state.consumerGone else { return .none }
            state.consumerGone = true
            state.chunks.removeAll()
            state.buffered = 0
            defer { state.waiter = nil }
            return .some(state.end == nil ? state.waiter : nil)
        }
        guard case .some(let pending) = waiter else { return }
        pending?.resume(throwing: ServiceError.cancelled())
        cancel()
    }
}
