internal import Dispatch

/// The task executor request spooling runs on: jobs go to a Dispatch queue, whose threads may
/// block on disk writes without holding one of Swift's cooperative pool threads (one per core).
/// Concurrent, so that one spool waiting on a slow disk never delays another.
final class SpoolWriteExecutor: TaskExecutor {
    static let shared = SpoolWriteExecutor()

    private static let marker = DispatchSpecificKey<Bool>()
    private let queue: DispatchQueue

    private init() {
        queue = DispatchQueue(label: "courier.request-spool", attributes: .concurrent)
        queue.setSpecific(key: Self.marker, value: true)
    }

    /// Whether the calling code runs on this executor's queue (for tests).
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) == true }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
