public import Logging

extension RequestCoordinator {
    /// Downloads `resource`'s response body to the file at `path`, through the same pipeline as
    /// a load: decorators (a token refresh replays it), retries, events, tracing and metrics, and
    /// shutdown.
    ///
    /// ```swift
    /// let download = coordinator.download(Invoice(id: 7), to: "/tmp/invoice-7.pdf")
    /// for await step in download.progress { print(step.bytesReceived) }
    /// let file = try await download.value.value   // path, size
    /// ```
    ///
    /// The body streams to a temporary file beside `path` (memory stays bounded whatever its
    /// size) and is renamed over `path` only once complete and accepted: a failed or cancelled
    /// download never leaves a partial file at `path` nor replaces what was there. A status the
    /// resource does not accept is `unacceptableStatus` and writes nothing.
    ///
    /// When the connection breaks mid-body and the retry policy allows another attempt (an
    /// idempotent method), the download resumes with `Range` and `If-Range` if the server
    /// allowed it (`Accept-Ranges: bytes` with a strong `ETag` or a `Last-Modified`, and an
    /// uncompressed body), appending a `206`; otherwise, or when the server answers `200`, it
    /// starts over. Downloads skip the cache and never share a transfer; the coordinator's
    /// `TransferOptions/maximumBodySize` does not apply to them (the body goes to disk).
    public nonisolated func download<R: Resource>(
        _ resource: R, to path: String, logger: Logger? = nil
    ) -> TransferHandle<Loaded<DownloadedFile>> {
        let (progress, reporter) = ProgressReporter.makeStream()
        let task = Task {
            defer { reporter.finish() }
            return try await self.runDownload(resource, to: path, progress: reporter, logger: logger)
        }
        return TransferHandle(progress: progress, task: task)
    }

    /// Loads `resource` as ``load(_:logger:)`` does, reporting its progress: the bytes of its
    /// body sent (a file or a multipart form with files is read from disk as it is sent), then
    /// those of the response received. Such a load never shares its transfer. With a transport
    /// that reports no progress (the test doubles), the sequence ends with no value.
    public nonisolated func upload<R: Resource>(_ resource: R, logger: Logger? = nil) -> TransferHandle<
        Loaded<R.Response>
    > {
        let (progress, reporter) = ProgressReporter.makeStream()
        let task = Task {
            defer { reporter.finish() }
            var plan = LoadPlan(resource: resource, coordinator: self, logger: logger)
            plan.coalescing = .never
            plan.budgetDeadline = nil  // an upload's size sets its length; a `Deadline` still bounds it
            // Each attempt's transport ends its own reporter; the handle's stream ends here.
            plan.options.progress = ProgressReporter(forwardingTo: reporter)
            return try await self.run(plan) { [plan] execution in
                try await Self.finish(resource, plan: plan, execution: execution)
            }
        }
        return TransferHandle(progress: progress, task: task)
    }

    private nonisolated func runDownload<R: Resource>(
        _ resource: R, to path: String, progress: ProgressReporter, logger: Logger?
    ) async throws -> Loaded<DownloadedFile> {
        var plan = LoadPlan(resource: resource, coordinator: self, logger: logger)
        let receiver = DownloadReceiver(
            destination: path, acceptableStatus: resource.acceptableStatus, progress: progress)
        plan.receiver = receiver
        plan.coalescing = .never
        plan.cachePolicy = .networkOnly
        plan.options.maximumBodySize = nil
        plan.options.progress = nil
        let id = plan.id
        let loaded: Loaded<DownloadedFile>
        do {
            loaded = try await run(plan) { [plan] execution in
                try Self.checkStatus(of: execution.response, for: resource, backend: plan.backend)
                let outcome = receiver.outcome
                return Loaded(
                    value: DownloadedFile(path: path, size: outcome.size, resumeCount: outcome.resumes),
                    response: execution.response.head, metrics: execution.response.metrics, source: .network,
                    isStale: false, networkError: nil, wasCoalesced: false, requestID: id, age: nil, storedAt: nil)
            }
        } catch {
            await receiver.discard()
            throw error
        }
        await receiver.discard()
        return loaded
    }
}
