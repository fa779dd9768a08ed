/// Bytes moved so far in each direction.
public struct TransferProgress: Sendable, Hashable {
    /// Body bytes received so far (on the wire).
    public var bytesReceived: Int64
    /// Body bytes the server announced, when it did.
    public var expectedBytesToReceive: Int64?
    /// Body bytes sent so far.
    public var bytesSent: Int64
    /// Body bytes to send, when known.
    public var expectedBytesToSend: Int64?

    /// Creates a progress value.
    public init(
        bytesReceived: Int64, expectedBytesToReceive: Int64?, bytesSent: Int64, expectedBytesToSend: Int64?
    ) {
        self.bytesReceived = bytesReceived
        self.expectedBytesToReceive = expectedBytesToReceive
        self.bytesSent = bytesSent
        self.expectedBytesToSend = expectedBytesToSend
    }
}

/// Delivers a transfer's progress to an `AsyncStream`.
///
/// ```swift
/// let (progress, reporter) = ProgressReporter.makeStream()
/// var options = TransferOptions()
/// options.progress = reporter
/// ```
/// Values never go backwards; the last one reports the final totals, then the stream ends.
public final class ProgressReporter: Sendable {
    private let continuation: AsyncStream<TransferProgress>.Continuation?
    private let last = LockedValue<TransferProgress?>(nil)
    /// Where a forwarding reporter sends its values.
    private let target: ProgressReporter?

    private init(continuation: AsyncStream<TransferProgress>.Continuation) {
        self.continuation = continuation
        target = nil
    }

    /// A reporter for one attempt of a transfer that may be repeated: it passes its values to
    /// `target` (which still drops those that do not move forward) and its `finish` does not
    /// end `target`'s stream.
    package init(forwardingTo target: ProgressReporter) {
        continuation = nil
        self.target = target
    }

    /// A stream of progress values and the reporter to put into ``TransferOptions/progress``.
    /// Only the newest value is buffered, so a slow reader never slows the transfer.
    public static func makeStream() -> (AsyncStream<TransferProgress>, ProgressReporter) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: TransferProgress.self, bufferingPolicy: .bufferingNewest(1))
        return (stream, ProgressReporter(continuation: continuation))
    }

    /// Reports a value if it moves forward.
    package func report(received: Int64, expectedReceive: Int64?, sent: Int64, expectedSend: Int64?) {
        if let target {
            target.report(received: received, expectedReceive: expectedReceive, sent: sent, expectedSend: expectedSend)
            return
        }
        let value: TransferProgress? = last.withLock { last in
            if let previous = last {
                guard received >= previous.bytesReceived, sent >= previous.bytesSent,
                    received != previous.bytesReceived || sent != previous.bytesSent
                        || (expectedReceive ?? -1) != (previous.expectedBytesToReceive ?? -1)
                else { return nil }
            }
            let next = TransferProgress(
                bytesReceived: received, expectedBytesToReceive: expectedReceive,
                bytesSent: sent, expectedBytesToSend: expectedSend)
            last = next
            return next
        }
        if let value { continuation?.yield(value) }
    }

    /// Ends the stream (a forwarding reporter's target is left running).
    package func finish() { continuation?.finish() }
}
