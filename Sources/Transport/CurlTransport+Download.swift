internal import FoundationEssentials
public import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

extension CurlTransport {
    /// Downloads a response body to the file at `path`, inflating it as it streams, with
    /// memory bounded by ``Configuration/streamBufferSize`` whatever the body's size.
    ///
    /// The body is written to a temporary file beside `path` and renamed over it only once
    /// complete: a failed download never leaves a partial file at `path`. Set
    /// `TransferOptions.maximumBodySize` to `nil` for bodies over 64 MiB.
    ///
    /// - Returns: The response head and metrics; `body` is empty.
    /// - Throws: `ServiceError`, as ``send(_:body:options:)``, and `fileAccess`.
    public func download(
        _ request: HTTPRequest, body: RequestBody? = nil, to path: String, options: TransferOptions = TransferOptions()
    ) async throws -> TransportResponse {
        let streamed = try await streamResponse(request, body: body, options: options)
        let temporary = path + ".courier-\(UInt64.random(in: 0...UInt64.max)).part"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ServiceError(.fileAccess, "Cannot create the download file (errno \(errno)).")
        }
        var renamed = false
        defer {
            close(descriptor)
            if !renamed { unlink(temporary) }
        }
        var written: Int64 = 0
        for try await chunk in streamed.body {
            if let failed = chunk.withUnsafeBytes({ writeFully(descriptor, $0) }) {
                throw ServiceError(.fileAccess, "Writing the download file failed (errno \(failed)).")
            }
            written += Int64(chunk.count)
        }
        guard rename(temporary, path) == 0 else {
            throw ServiceError(.fileAccess, "Cannot move the download into place (errno \(errno)).")
        }
        renamed = true
        var response = TransportResponse(head: streamed.head)
        response.metrics.redirectCount = streamed.redirectCount
        response.metrics.bytesReceived = written
        response.trailers = streamed.body.trailers ?? HTTPFields()
        return response
    }
}
