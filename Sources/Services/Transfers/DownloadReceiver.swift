internal import CourierCore
internal import FoundationEssentials
internal import HTTPTypes

/// Receives a download: writes the body of each attempt to a temporary file beside the
/// destination and renames it into place once the body is complete.
///
/// An attempt after a cut resumes with `Range` and `If-Range` when the full response allowed it
/// (`Accept-Ranges: bytes`, a `Content-Length`, so the bytes on disk are the bytes on the wire,
/// and a strong `ETag` or a `Last-Modified`); a `206` appends, anything else starts over. Once
/// ``discard()`` ran, nothing reaches the destination and the temporary file is gone, even if
/// an attempt was still writing.
final class DownloadReceiver: ResponseReceiver {
    private struct State {
        var file: PartialFile?
        /// Bytes of the body on disk, counted from its first byte.
        var written: Int64 = 0
        /// The `If-Range` value a resumed attempt sends; nil when the server does not allow it.
        var validator: String?
        var isAttemptActive = false
        var isAbandoned = false
        var isCommitted = false
        var resumes = 0
        /// Waits in ``discard()`` for the attempt in progress to end.
        var discardWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let destination: String
    private let acceptableStatus: Range<Int>
    private let progress: ProgressReporter?
    private let state = LockedValue(State())

    init(destination: String, acceptableStatus: Range<Int>, progress: ProgressReporter?) {
        self.destination = destination
        self.acceptableStatus = acceptableStatus
        self.progress = progress
    }

    var resumesCutBodies: Bool { true }

    /// The size of the file that was moved into place, and how many attempts resumed.
    var outcome: (size: Int64, resumes: Int) { state.withLock { ($0.written, $0.resumes) } }

    func receive(
        _ request: HTTPRequest, send: (HTTPRequest) async throws -> StreamingTransportResponse
    ) async throws -> TransportResponse {
        let started = ContinuousClock.now
        let resumeFrom: (offset: Int64, validator: String)? = try state.withLock { state in
            guard !state.isAbandoned else { throw ServiceError.cancelled() }
            state.isAttemptActive = true
            guard state.written > 0, let validator = state.validator else { return nil }
            return (state.written, validator)
        }
        defer { endAttempt() }
        var request = request
        if let resumeFrom {
            request.headerFields[.range] = "bytes=\(resumeFrom.offset)-"
            request.headerFields[.ifRange] = resumeFrom.validator
        }
        let response = try await send(request)
        let head = response.head
        guard acceptableStatus.contains(head.status.code) else {
            return TransportResponse(
                head: head, body: try await Self.excerpt(of: response.body), metrics: response.metrics)
        }
        let (start, total) = try begin(head, resumingFrom: resumeFrom?.offset, body: response.body)
        for try await chunk in response.body {
            let written = try state.withLock { state in
                guard !state.isAbandoned, let file = state.file else { throw ServiceError.cancelled() }
                try file.write(chunk)
                state.written += Int64(chunk.count)
                return state.written
            }
            progress?.report(received: written, expectedReceive: total, sent: 0, expectedSend: nil)
        }
        let size = try state.withLock { state in
            guard !state.isAbandoned, let file = state.file else { throw ServiceError.cancelled() }
            try file.move(to: destination)
            state.isCommitted = true
            return state.written
        }
        var metrics = response.metrics
        metrics.bytesReceived = size - start
        metrics.total = ContinuousClock.now - started
        var received = TransportResponse(head: head, metrics: metrics)
        received.trailers = response.body.trailers ?? HTTPFields()
        return received
    }

    /// Positions the file for an accepted response: after the bytes on disk for a `206` that
    /// continues them, at zero otherwise. Returns the offset and the body's whole size, if known.
    private func begin(_ head: HTTPResponse, resumingFrom offset: Int64?, body: TransportBody) throws -> (Int64, Int64?)
    {
        let length = head.headerFields[.contentLength].flatMap { Int64($0) }
        do {
            return try state.withLock { state in
                guard !state.isAbandoned else { throw ServiceError.cancelled() }
                if state.file == nil { state.file = try PartialFile(beside: destination) }
                if head.status.code == 206 {
                    guard let offset, length != nil, let range = Self.contentRange(head), range.first == offset else {
                        state.validator = nil
                        state.written = 0
                        throw ServiceError(
                            .malformedResponse, "The server sent a 206 that does not continue the download.",
                            response: head)
                    }
                    try state.file?.truncate(at: offset)
                    state.resumes += 1
                    return (offset, range.total)
                }
                try state.file?.truncate(at: 0)
                state.written = 0
                state.validator = Self.resumeValidator(head)
                return (0, length)
            }
        } catch {
            body.discard()
            throw error
        }
    }

    private func endAttempt() {
        let waiters = state.withLock { state in
            state.isAttemptActive = false
            guard state.isAbandoned else { return [CheckedContinuation<Void, Never>]() }
            Self.clean(&state)
            defer { state.discardWaiters = [] }
            return state.discardWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends the download: closes the file and removes it unless it was moved into place. When
    /// an attempt still runs (its load was cancelled and the transfer is stopping), returns once
    /// it ended and cleaned up, so a cancelled download's caller finds no temporary file.
    func discard() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                state.isAbandoned = true
                guard state.isAttemptActive else {
                    Self.clean(&state)
                    return true
                }
                state.discardWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private static func clean(_ state: inout State) {
        state.file?.close(removing: !state.isCommitted)
        state.file = nil
    }

    /// The `If-Range` value for resuming `head`'s body, or nil when it cannot be resumed.
    static func resumeValidator(_ head: HTTPResponse) -> String? {
        let fields = head.headerFields
        guard head.status.code == 200, fields[.contentLength] != nil,
            let ranges = fields[.acceptRanges],
            ranges.lowercased().split(separator: ",").contains(where: {
                $0.filter { $0 != " " && $0 != "\t" } == "bytes"
            })
        else { return nil }
        if let tag = fields[.eTag], !tag.hasPrefix("W/") { return tag }
        return fields[.lastModified]
    }

    /// `Content-Range: bytes first-last/total` (total may be `*`).
    static func contentRange(_ head: HTTPResponse) -> (first: Int64, last: Int64, total: Int64?)? {
        guard let value = head.headerFields[.contentRange], value.hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count).split(separator: "/", maxSplits: 1)
        let bounds = spec.first?.split(separator: "-", maxSplits: 1) ?? []
        guard spec.count == 2, bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first <= last
        else { return nil }
        return (first, last, Int64(spec[1]))
    }
}
