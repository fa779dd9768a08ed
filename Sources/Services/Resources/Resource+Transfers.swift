public import Logging

extension Resource {
    /// Downloads this resource's response body to the file at `path` on `coordinator`; see
    /// ``RequestCoordinator/download(_:to:logger:)``.
    public func download(
        to path: String, using coordinator: RequestCoordinator = .current, logger: Logger? = nil
    ) -> TransferHandle<Loaded<DownloadedFile>> {
        coordinator.download(self, to: path, logger: logger)
    }

    /// Loads this resource with its upload (and download) progress; see
    /// ``RequestCoordinator/upload(_:logger:)``.
    public func upload(
        using coordinator: RequestCoordinator = .current, logger: Logger? = nil
    ) -> TransferHandle<Loaded<Response>> {
        coordinator.upload(self, logger: logger)
    }
}
