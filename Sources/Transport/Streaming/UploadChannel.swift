internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// The hand-off of a streamed request body (``RequestBody/stream(_:length:contentType:trailers:)``)
/// between its producer, a task that reads the caller's sequence, and curl's read callback on
/// the loop thread, with backpressure both ways:
/// - curl finds nothing buffered: the read callback pauses the transfer, and the next chunk
///   (or the end) asks the loop to resume it;
/// - the buffer reaches `highWater`: the producer waits until curl has drained it to a quarter.
///
/// The decisions are the ``StateMachine``'s; this class holds it under a lock and does what it
/// says outside the lock. The transfer closes the channel when it ends, which cancels the
/// producer's task and stops a producer waiting for room.
///
/// When the sequence ends, the producer stores the body's trailer fields (if it has any) before
/// it tells the machine, so curl's trailer callback, which runs after the read callback said
/// "end", always finds them.
final class UploadChannel: RequestBody.ChunkSink {
    private struct State: Sendable {
        var machine: StateMachine
        var waiter: CheckedContinuation<Void, any Error>?
        var producer: Task<Void, Never>?
        /// Asks the loop to resume the paused transfer; set by ``start(resume:)``, dropped by
        /// ``close()``.
        var resume: (@Sendable () -> Void)?
        /// The trailer fields the body ends with, once the producer has finished.
        var trailers = HTTPFields()
    }

    /// Thrown to the producer when it must stop (the transfer ended, or it overflowed the
    /// declared length): the reason is already the channel's.
    private struct Stopped: Error {}

    private let state: LockedValue<State>
    private let pump: RequestBody.StreamedBody.Pump

    init(highWater: Int, declaredLength: Int?, pump: @escaping RequestBody.StreamedBody.Pump) {
        state = LockedValue(State(machine: StateMachine(highWater: highWater, declaredLength: declaredLength)))
        self.pump = pump
    }

    /// Starts the producer. `resume` asks the loop to resume the transfer (a weak reference to
    /// it: the channel must not keep the transfer alive).
    func start(resume: @escaping @Sendable () -> Void) {
        let closed = state.withLock { state in
            if !state.machine.isClosed { state.resume = resume }
            return state.machine.isClosed
        }
        guard !closed else { return }
        let pump = self.pump
        let task = Task { [self] in
            var failure: ServiceError?
            var trailers = HTTPFields()
            do {
                trailers = try await pump(self)
            } catch is Stopped {
                return
            } catch let error as ServiceError {
                failure = error  // already typed (a limit of the layer that made the sequence)
            } catch {
                failure = ServiceError(
                    .requestBodyFailed, "The streamed request body's sequence threw: \(error)", underlying: error)
            }
            let resumeReader = state.withLock { state in
                state.trailers = trailers
                return state.machine.finish(failure)
            }
            if resumeReader { wakeReader() }
        }
        let cancelNow = state.withLock { state in
            state.producer = task
            return state.machine.isClosed
        }
        if cancelNow { task.cancel() }
    }

    private func wakeReader() {
        state.withLock { $0.resume }?()
    }

    /// The trailer fields the body ended with (empty before the end, or when it has none).
    var trailers: HTTPFields { state.withLock { $0.trailers } }

    // MARK: producer

    func send(_ chunk: Data) async throws {
        let action = state.withLock { $0.machine.offer(chunk) }
        switch action {
        case .proceed(let resumeReader):
            if resumeReader { wakeReader() }
        case .stop(_, let resumeReader):
            if resumeReader { wakeReader() }
            throw Stopped()
        case .wait(let resumeReader):
            if resumeReader { wakeReader() }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Next { case wait, go, stop }
                let next: Next = state.withLock { state in
                    if state.machine.isClosed { return .stop }
                    guard state.machine.producerWaits else { return .go }
                    state.waiter = continuation
                    return .wait
                }
                switch next {
                case .wait: break
                case .go: continuation.resume()
                case .stop: continuation.resume(throwing: Stopped())
                }
            }
        }
    }

    // MARK: reader (loop thread)

    /// curl's read callback: copies bytes into `target`, or says to pause, end or fail.
    func read(into target: UnsafeMutableRawBufferPointer) -> StateMachine.Read {
        let (read, waiter) = state.withLock { state -> (StateMachine.Read, CheckedContinuation<Void, any Error>?) in
            let read = state.machine.read(into: target)
            guard case .bytes(_, resumeProducer: true) = read else { return (read, nil) }
            defer { state.waiter = nil }
            return (read, state.waiter)
        }
        waiter?.resume()
        return read
    }

    /// Whether curl may rewind to the start (nothing has been read yet).
    var canRewindToStart: Bool { state.withLock { $0.machine.canRewindToStart } }

    /// The most bytes ever buffered at once (tests read it to prove bounded memory).
    var bufferedHighWaterMark: Int { state.withLock { $0.machine.highWaterMark } }

    /// The transfer ended: stops the producer and drops what is buffered.
    func close() {
        let (waiter, producer) = state.withLock {
            state -> (CheckedContinuation<Void, any Error>?, Task<Void, Never>?) in
            _ = state.machine.close()
            defer {
                state.waiter = nil
                state.resume = nil
            }
            return (state.waiter, state.producer)
        }
        waiter?.resume(throwing: Stopped())
        producer?.cancel()
    }
}
