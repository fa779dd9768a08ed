/// A transfer in progress through a ``RequestCoordinator``: its progress as an `AsyncSequence`,
/// its outcome once it ends, and a way to cancel it.
///
/// ```swift
/// let download = coordinator.download(Report(id: 7), to: "/tmp/report.pdf")
/// for await progress in download.progress {
///     print(progress.bytesReceived, "of", progress.expectedBytesToReceive ?? -1)
/// }
/// let file = try await download.value.value   // Loaded<DownloadedFile>
/// ```
///
/// The transfer runs whether or not anyone reads `progress` or awaits `value`, until it ends or
/// ``cancel()`` is called. `progress` only ever moves forward (a download that starts over is
/// reported again from where it had reached), holds only the newest value for a slow reader,
/// and ends when the transfer ends.
public struct TransferHandle<Value: Sendable>: Sendable {
    /// The bytes moved so far, newest last; the sequence ends with the transfer.
    public let progress: AsyncStream<TransferProgress>
    private let task: Task<Value, any Error>

    init(progress: AsyncStream<TransferProgress>, task: Task<Value, any Error>) {
        self.progress = progress
        self.task = task
    }

    /// The outcome: the value, or the transfer's `ServiceError` (`cancelled` after ``cancel()``,
    /// `shutDown` when the coordinator shut down with it in flight).
    public var value: Value {
        get async throws { try await task.value }
    }

    /// Stops the transfer; ``value`` then fails with `cancelled`, and a download leaves no file.
    public func cancel() { task.cancel() }
}
