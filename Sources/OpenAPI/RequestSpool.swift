internal import CourierCore
internal import CourierServices
internal import Foundation
internal import OpenAPIRuntime

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// A request body made replayable, so that retries and decorator replays (a token refresh
/// after 401) can send it again: in memory when it is small, else spooled chunk by chunk to a
/// temporary file that every attempt re-reads. Memory holds at most the threshold plus one
/// chunk, whatever the body's size.
///
/// The file is created 0600 with a unique name; ``remove()`` deletes it, and the transport
/// calls it when the request ends, however it ends. An error thrown while spooling removes
/// the file itself.
struct RequestSpool: Sendable {
    /// What to send: `nil` (no body), bytes in memory, or the spool file.
    let body: RequestBody?
    /// The spool file, when the body went to disk.
    let path: String?

    /// The file name prefix of spool files, e.g. `courier-request-<UUID>`.
    static let filePrefix = "courier-request-"

    /// Reads `body` once: into memory while it stays within `threshold` bytes, into a new file
    /// in `directory` once it (or its declared length) grows past it. Throws `invalidRequest`
    /// past `limit` bytes, `fileAccess` when the file cannot be created or written,
    /// `cancelled` when the task is cancelled, `encodingFailed` when the body fails to read.
    ///
    /// With `streams` (no retry can send the request again), a body that is not known to fit
    /// the threshold is not read here at all: it goes out as a
    /// ``RequestBody/stream(_:length:contentType:trailers:)``, chunk by chunk as it is produced, still
    /// within `limit`.
    static func make(
        from body: HTTPBody?, threshold: Int, limit: Int, directory: URL, streams: Bool = false
    ) async throws(ServiceError) -> RequestSpool {
        guard let body else { return RequestSpool(body: nil, path: nil) }
        if streams, !body.length.isKnownWithin(threshold) {
            var length: Int?
            if case .known(let declared) = body.length {
                guard declared <= limit else { throw tooLarge(declared, limit: limit) }
                length = Int(declared)
            }
            return RequestSpool(body: .stream(LimitedChunks(body: body, limit: limit), length: length), path: nil)
        }
        var file: SpoolFile?
        do {
            var chunks = body.makeAsyncIterator()
            var total = 0
            var buffer = Data()
            var pending: HTTPBody.ByteChunk?
            if case .known(let length) = body.length {
                guard length <= limit else { throw tooLarge(length, limit: limit) }
                if length <= threshold { buffer.reserveCapacity(Int(length)) }
            }
            // In memory while the body (or its declared length) stays within the threshold.
            if body.length.isWithin(threshold) {
                while let chunk = try await chunks.next() {
                    guard total + chunk.count <= limit else { throw tooLarge(nil, limit: limit) }
                    total += chunk.count
                    if buffer.count + chunk.count > threshold {
                        pending = chunk
                        break
                    }
                    buffer.append(contentsOf: chunk)
                    // A body whose producer ignores cancellation still stops at the next chunk.
                    if Task.isCancelled { throw ServiceError.cancelled() }
                }
                if pending == nil { return RequestSpool(body: .bytes(buffer), path: nil) }
            }
            // On disk: the writes (and the reads between them) run on a thread of their own, so a
            // slow disk never holds one of the cooperative pool's few threads.
            let spooled = try await withTaskExecutorPreference(SpoolWriteExecutor.shared) {
                let created = try SpoolFile(in: directory)
                file = created
                try created.write(buffer)
                buffer = Data()
                if let pending { try created.write(pending) }
                pending = nil
                while let chunk = try await chunks.next() {
                    guard total + chunk.count <= limit else { throw tooLarge(nil, limit: limit) }
                    total += chunk.count
                    try created.write(chunk)
                    if Task.isCancelled { throw ServiceError.cancelled() }
                }
                try created.close()
                return created.path
            }
            return RequestSpool(body: .file(atPath: spooled), path: spooled)
        } catch {
            file?.discard()
            if let error = error as? ServiceError { throw error }
            if error is CancellationError || Task.isCancelled { throw .cancelled() }
            throw ServiceError(.encodingFailed, "The request body could not be read: \(error)", underlying: error)
        }
    }

    /// Deletes the spool file, if there is one. Safe to call more than once.
    func remove() {
        if let path { unlink(path) }
    }

    fileprivate static func tooLarge(_ length: Int64?, limit: Int) -> ServiceError {
        let size = length.map { "\($0) bytes" } ?? "more bytes"
        return ServiceError(
            .invalidRequest, "The request body has \(size) than the transport's limit of \(limit) bytes allows.")
    }
}

/// A spool file being written: created exclusively (`O_EXCL`, mode 0600), written with
/// `write(2)` until every byte is out.
private final class SpoolFile {
    let path: String
    private var descriptor: Int32

    init(in directory: URL) throws(ServiceError) {
        let path = directory.appending(path: RequestSpool.filePrefix + UUID().uuidString).path(percentEncoded: false)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw Self.failure("cannot create a request spool file in \(directory.path(percentEncoded: false))", code)
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit { if descriptor >= 0 { _ = Glibc.close(descriptor) } }

    /// Appends `bytes` to the file.
    func write(_ bytes: some ContiguousBytes) throws(ServiceError) {
        let failed = bytes.withUnsafeBytes { writeFully(descriptor, $0) }
        if let failed { throw Self.failure("cannot write the request spool file \(path)", failed) }
    }

    /// Closes the file; a failed close (a full disk on some file systems) is a write error.
    func close() throws(ServiceError) {
        let result = Glibc.close(descriptor)
        let code = errno
        descriptor = -1
        guard result == 0 else { throw Self.failure("cannot finish the request spool file \(path)", code) }
    }

    /// Closes and deletes the file (a failed or cancelled spool).
    func discard() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
        unlink(path)
    }

    private static func failure(_ what: String, _ code: Int32) -> ServiceError {
        let reason = String(cString: strerror(code))
        return ServiceError(
            .fileAccess, "The request body was not sent: \(what) (\(reason), errno \(code)).")
    }
}

extension HTTPBody.Length {
    /// Whether a body of this length may fit in `threshold` bytes (an unknown length may).
    fileprivate func isKnownWithin(_ threshold: Int) -> Bool {
        if case .known(let length) = self { return length <= threshold }
        return false
    }

    fileprivate func isWithin(_ threshold: Int) -> Bool {
        if case .known(let length) = self { return length <= threshold }
        return true
    }
}

/// An OpenAPI body's chunks as `Data`, failing with `invalidRequest` once they pass `limit`.
private struct LimitedChunks: AsyncSequence, Sendable {
    let body: HTTPBody
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: HTTPBody.AsyncIterator
        let limit: Int
        var total = 0

        mutating func next() async throws -> Data? {
            guard let chunk = try await chunks.next() else { return nil }
            total += chunk.count
            guard total <= limit else { throw RequestSpool.tooLarge(nil, limit: limit) }
            return Data(chunk)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: body.makeAsyncIterator(), limit: limit) }
}
