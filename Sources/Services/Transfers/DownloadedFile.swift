/// A response body saved to a file by ``RequestCoordinator/download(_:to:logger:)``.
public struct DownloadedFile: Sendable, Hashable {
    /// Where the body is: the destination that was asked for.
    public var path: String
    /// Its size in bytes.
    public var size: Int64
    /// How many times the download continued, with `Range`, after the connection broke
    /// mid-body (0 when the body arrived at once, or each retry started over).
    public var resumeCount: Int

    /// Creates a value (for test doubles).
    package init(path: String, size: Int64, resumeCount: Int = 0) {
        self.path = path
        self.size = size
        self.resumeCount = resumeCount
    }
}
