internal import FoundationEssentials
public import HTTPTypes

/// A load whose body is read as it arrives, from ``RequestCoordinator/stream(_:logger:)``.
public struct StreamedLoad: Sendable {
    /// The response head (status and header fields) the resource accepted.
    public var response: HTTPResponse
    /// What the transfer cost until its head arrived (redirects); the body is still to come.
    public var metrics: TransferMetrics
    /// The coordinator's id for this load, as in its events and log metadata.
    public var requestID: UInt64
    /// The body, chunk by chunk (inflated when it was compressed), read once.
    ///
    /// Leaving the loop early, dropping the iterator, calling `cancel()` or cancelling the
    /// reading task stops the transfer. Errors are `ServiceError`s: `truncatedBody` when the
    /// connection breaks (never retried once the body began), `cancelled`, and `shutDown` when
    /// the coordinator shut down cancelling what was in flight. The coordinator's drain waits
    /// until the body was read to its end or let go.
    public var body: TransportBody
}

extension StreamedLoad {
    /// The transport's body with the coordinator's lease on it: the lease ends when the body
    /// was read to its end, failed, or was let go.
    struct Chunks: AsyncSequence, Sendable {
        typealias Element = Data
        let body: TransportBody
        let lease: StreamLease

        func makeAsyncIterator() -> Iterator {
            Iterator(state: IteratorState(body.makeAsyncIterator(), lease: lease))
        }

        /// Reads the chunks one by one.
        struct Iterator: AsyncIteratorProtocol {
            let state: IteratorState

            mutating func next() async throws -> Data? { try await state.next() }
        }
    }
}

extension StreamedLoad.Chunks {
    /// Reading state in a class, so that dropping the iterator lets the stream go.
    /// Not `Sendable`: one task reads a body.
    final class IteratorState {
        private var base: TransportBody.Iterator?
        private let lease: StreamLease

        init(_ base: TransportBody.Iterator, lease: StreamLease) {
            self.base = base
            self.lease = lease
        }

        deinit { lease.end() }

        func next() async throws -> Data? {
            guard base != nil else { return nil }
            do {
                if let chunk = try await base?.next() { return chunk }
                base = nil
                lease.end()
                return nil
            } catch {
                base = nil
                lease.end()
                if lease.wasShutDown {
                    throw ServiceError(.shutDown, "The coordinator shut down while the body streamed.")
                }
                throw ServiceError.wrapping(error)
            }
        }
    }
}

/// An open streamed body, as the coordinator counts it: shutdown waits for it to end, or
/// cancels it. Ends once, when read to the end, failed, or dropped.
final class StreamLease: Sendable {
    private struct State {
        var ended = false
        var shutDown = false
    }

    private let state = LockedValue(State())
    private let body: TransportBody
    private let onEnd: @Sendable () -> Void

    init(body: TransportBody, onEnd: @escaping @Sendable () -> Void) {
        self.body = body
        self.onEnd = onEnd
    }

    /// Nobody holds the body any more: stop it if it was never read to its end.
    deinit {
        if !state.withLock({ $0.ended }) {
            body.cancel()
            onEnd()
        }
    }

    /// Whether shutdown cancelled the body.
    var wasShutDown: Bool { state.withLock { $0.shutDown } }

    /// Stops the body for shutdown; its reader gets `shutDown`.
    func shutDown() {
        state.withLock { $0.shutDown = true }
        body.cancel()
    }

    /// The reader is done with the body (read to its end, failed, or its iterator dropped,
    /// which stops the transfer by itself).
    func end() {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        if first { onEnd() }
    }
}
