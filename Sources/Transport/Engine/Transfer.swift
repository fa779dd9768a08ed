internal import CCurl
internal import FoundationEssentials
internal import HTTPTypes
internal import Synchronization

#if canImport(Glibc)
internal import Glibc
#endif

/// What one hop of a request produced: the head, built and checked on the loop thread as its
/// lines arrive (``ResponseHeadParser``), and the body.
struct HopResult: Sendable {
    var head: HTTPResponse
    /// The body as received (still compressed if it was), for buffered transfers.
    var body: Data
    var metrics: TransferMetrics
    /// Set when the hop ended at a redirect the transport should follow.
    var redirectURL: String?
    /// For streamed transfers: where the body chunks arrive.
    var channel: BodyChannel?
    /// False only when the head is known to have no `Content-Encoding`, so there is nothing
    /// to inflate and no need to look.
    var mayBeEncoded = true
    /// The response's trailer fields (``ResponseTrailers``), once the body ended.
    var trailers = HTTPFields()
}

/// One request's state while curl runs it.
///
/// Thread-safety invariant (why `@unchecked Sendable` is sound): the creating task sets
/// `delivery` before handing the transfer to the loop through its mutex-protected inbox;
/// from then on its mutable state (``TransferLoopSide``, held in a ``LoopBound``) is read and
/// written only on the loop thread (in `CurlEventLoop` and in curl's callbacks, which curl
/// calls on that thread), until `deinit`. The only state touched from other threads is
/// `cancelRequested`, an atomic. ``LoopBound`` checks both halves in debug builds (the thread,
/// once the loop accepts the transfer, and that no access overlaps another) and skips the
/// checks in release builds: curl calls the callbacks from `curl_multi_perform` (and
/// `curl_easy_pause`), never while the loop is in the middle of changing a transfer.
///
/// A separate box, not a subclass of ``LoopBound``: under a generic superclass, every one of
/// the transfer's own stored properties would be found through its runtime metadata (branch
/// `transfer-bound2` measured some 6,000 instructions a `send` that way).
final class Transfer: @unchecked Sendable {
    /// How the awaiting task hears back. Its continuation is resumed exactly once: `deliver`
    /// and `headComplete` clear it as they resume it, on the loop thread. A checked one: an
    /// unchecked continuation saves its canary (some 1,000 to 3,000 instructions a transfer),
    /// but ThreadSanitizer cannot see the hand-over through it and reports the task's next
    /// write to its frame as a race.
    enum Delivery {
        /// Resume once, at the end, with the whole body in memory.
        case buffered(CheckedContinuation<HopResult, any Error>)
        /// Resume once the head is known; the body then flows through the channel.
        case streamed(CheckedContinuation<HopResult, any Error>?, BodyChannel)
    }

    let request: PreparedRequest
    private let cancelRequested = Atomic<Bool>(false)

    /// Everything else the loop thread reads and writes (``TransferLoopSide``), bound to the
    /// loop thread when the loop accepts the transfer. Its fields keep their names below.
    let loopSide: LoopBound<TransferLoopSide>

    /// The queue's record of this transfer's origin, while it waits or runs. Weak: the origin
    /// holds its waiting transfers, and the queue's `origins` keeps it alive while any of them
    /// waits or runs, so a queue dropped with transfers still waiting leaves no cycle behind
    /// (AddressSanitizer's leak check found one in the queue's unit tests).
    weak var origin: AdmissionQueue.Origin?
    /// When the total timeout (``TransferOptions/timeout``) runs out, counted from when the
    /// caller asked (so time spent waiting for admission counts), or the load's deadline
    /// (``TransferOptions/deadline``) when that comes first.
    let deadline: ContinuousClock.Instant?

    /// Where large body buffers come from and go back to.
    let bodyBuffers: BodyBufferPool
    /// Bytes of a streamed request body buffered before its producer waits
    /// (``CurlTransport/Configuration/streamBufferSize``).
    let streamBufferSize: Int

    enum Admission {
        case new
        case waiting(sequence: Int)
        case admitted(units: Int)
        /// Released, cancelled or failed: no longer counted by the queue.
        case gone
    }

    init(request: PreparedRequest, bodyBuffers: BodyBufferPool, streamBufferSize: Int = 256 << 10) {
        self.request = request
        self.bodyBuffers = bodyBuffers
        self.streamBufferSize = streamBufferSize
        loopSide = LoopBound(TransferLoopSide(head: ResponseHeadParser(limit: request.options.maximumHeaderSize)))
        deadline = Self.deadline(of: request.options)
    }

    /// The earlier of the total timeout's end and the load's deadline.
    private static func deadline(of options: TransferOptions) -> ContinuousClock.Instant? {
        let timeout = options.timeout.map { ContinuousClock.now + $0 }
        guard let load = options.deadline?.instant else { return timeout }
        guard let timeout else { return load }
        return min(timeout, load)
    }

    deinit {
        loopSide.unbind()  // the last reference: no thread touches it any more
        if let buffer { bodyBuffers.give(buffer, capacity: capacity) }
        if let headerList { curl_slist_free_all(headerList) }
    }

    /// Marks the transfer cancelled; the loop removes it on its next turn.
    func requestCancel() { cancelRequested.store(true, ordering: .releasing) }
    var isCancelRequested: Bool { cancelRequested.load(ordering: .acquiring) }

    // MARK: callbacks (loop thread)

    /// A byte moved: the idle limit counts from now.
    func touch() {
        if idleWatch != nil { idleWatch!.touch(at: courier_coarse_now()) }
    }

    func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        touch()
        do {
            if head.isComplete {
                // After the final head, curl hands over only the trailer section's lines.
                if trailers == nil { trailers = ResponseTrailers(limit: request.options.maximumHeaderSize) }
                try trailers!.consume(line)
            } else if try head.consume(line) {
                try headComplete()
            }
            return line.count
        } catch {
            abortError = error
            return 0
        }
    }

    private func headComplete() throws(ServiceError) {
        guard let status = head.status else { return }
        if request.stopsAtRedirect, [301, 302, 303, 307, 308].contains(status), head.hasLocation {
            discardsBody = true
            return
        }
        // A body announced over the limit fails before it arrives. A response that has no body
        // by definition (to HEAD; 1xx, 204, 304) may announce any length: it is the length of
        // the representation, not of anything sent.
        if let limit = request.options.maximumBodySize, let length = head.contentLength, length > limit,
            Self.hasBody(status: status, method: request.method)
        {
            throw ServiceError(
                .responseTooLarge, "The response announces a body of \(length) bytes, over the limit of \(limit) bytes."
            )
        }
        switch delivery {
        case .buffered:
            if let length = head.contentLength, length > 0 {
                let limit = Int64(request.options.maximumBodySize ?? Int.max)
                reserve(Int(min(length, limit)))
            }
        case .streamed(let continuation?, let channel):
            guard let response = head.response else { return }
            delivery = .streamed(nil, channel)
            TSanHandoff.release(self)
            continuation.resume(
                returning: HopResult(
                    head: response, body: Data(), metrics: TransferMetrics(), channel: channel,
                    mayBeEncoded: head.hasContentEncoding))
        case .streamed(nil, _), nil:
            break
        }
    }

    /// Whether a response with this status, to a request with this method, carries a body
    /// (RFC 9110, section 6.4.1).
    static func hasBody(status: Int, method: HTTPRequest.Method) -> Bool {
        method != .head && status >= 200 && status != 204 && status != 304
    }

    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        touch()
        if abortError != nil { return 0 }
        if discardsBody { return bytes.count }
        switch delivery {
        case .buffered:
            if let limit = request.options.maximumBodySize, count + bytes.count > limit {
                abortError = ServiceError(.responseTooLarge, "The response body exceeds the limit of \(limit) bytes.")
                return 0
            }
            if count + bytes.count > capacity { reserve(max(capacity * 2, count + bytes.count, 16 << 10)) }
            (buffer! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            count += bytes.count
            return bytes.count
        case .streamed(_, let channel):
            switch channel.offer(bytes) {
            case .accepted: return bytes.count
            case .pause:
                isPaused = true
                return courier_writefunc_pause
            case .closed:
                abortError = .cancelled()
                return 0
            }
        case nil:
            return 0
        }
    }

    private func reserve(_ size: Int) {
        guard size > capacity else { return }
        let (grown, grownCapacity) = bodyBuffers.take(size)
        if let buffer {
            grown.copyMemory(from: buffer, byteCount: count)
            bodyBuffers.give(buffer, capacity: capacity)
        }
        buffer = grown
        capacity = grownCapacity
    }

    func progress(received: Int64, expectedReceive: Int64, sent: Int64, expectedSend: Int64) {
        guard !discardsBody else { return }
        request.options.progress?.report(
            received: received, expectedReceive: expectedReceive > 0 ? expectedReceive : nil,
            sent: sent, expectedSend: expectedSend > 0 ? expectedSend : (upload?.length))
    }
}

/// Everything the loop thread reads and writes while it runs a ``Transfer``: the value of the
/// transfer's ``LoopBound``, bound to the loop thread when the loop accepts the transfer;
/// before that, the task that creates it sets `delivery`.
struct TransferLoopSide: ~Copyable {
    var delivery: Transfer.Delivery?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var head: ResponseHeadParser
    /// The trailer section, from its first line after the final head.
    var trailers: ResponseTrailers?
    var buffer: UnsafeMutableRawPointer?
    var capacity = 0
    var count = 0
    var discardsBody = false
    var abortError: ServiceError?
    var upload: UploadSource?
    /// curl's error message: the easy handle's buffer, while the transfer has one.
    var errorBuffer: UnsafeMutablePointer<CChar>?
    /// The options set on the easy handle beyond those every transfer sets.
    var handleFootprint: OptionFootprint = []
    /// Transfers the easy handle has run since its last reset, this one included.
    var handleUses = 0
    /// The idle limit's watch, from when the loop hands the transfer to curl.
    var idleWatch: IdleWatch?
    /// Whether the last body chunk paused the transfer (its stream's consumer lags).
    var isPaused = false
    /// Where the transfer stands in its loop's ``AdmissionQueue``.
    var admission = Transfer.Admission.new
}

// The loop side's fields by their names: each access is a short one through ``LoopBound``
// (small values are copied out, so that no access spans another; the larger ones are
// mutated in place).
extension Transfer {
    var delivery: Delivery? {
        _read { yield loopSide.value.delivery }
        _modify { yield &loopSide.value.delivery }
    }
    var easy: UnsafeMutableRawPointer? {
        get { loopSide.value.easy }
        set { loopSide.value.easy = newValue }
    }
    var headerList: UnsafeMutablePointer<curl_slist>? {
        get { loopSide.value.headerList }
        set { loopSide.value.headerList = newValue }
    }
    var head: ResponseHeadParser {
        _read { yield loopSide.value.head }
        _modify { yield &loopSide.value.head }
    }
    var trailers: ResponseTrailers? {
        _read { yield loopSide.value.trailers }
        _modify { yield &loopSide.value.trailers }
    }
    var buffer: UnsafeMutableRawPointer? {
        get { loopSide.value.buffer }
        set { loopSide.value.buffer = newValue }
    }
    var capacity: Int {
        get { loopSide.value.capacity }
        set { loopSide.value.capacity = newValue }
    }
    var count: Int {
        get { loopSide.value.count }
        set { loopSide.value.count = newValue }
    }
    var discardsBody: Bool {
        get { loopSide.value.discardsBody }
        set { loopSide.value.discardsBody = newValue }
    }
    var abortError: ServiceError? {
        get { loopSide.value.abortError }
        set { loopSide.value.abortError = newValue }
    }
    var upload: UploadSource? {
        _read { yield loopSide.value.upload }
        _modify { yield &loopSide.value.upload }
    }
    var errorBuffer: UnsafeMutablePointer<CChar>? {
        get { loopSide.value.errorBuffer }
        set { loopSide.value.errorBuffer = newValue }
    }
    var handleFootprint: OptionFootprint {
        get { loopSide.value.handleFootprint }
        set { loopSide.value.handleFootprint = newValue }
    }
    var handleUses: Int {
        get { loopSide.value.handleUses }
        set { loopSide.value.handleUses = newValue }
    }
    var idleWatch: IdleWatch? {
        _read { yield loopSide.value.idleWatch }
        _modify { yield &loopSide.value.idleWatch }
    }
    var isPaused: Bool {
        get { loopSide.value.isPaused }
        set { loopSide.value.isPaused = newValue }
    }
    var admission: Admission {
        get { loopSide.value.admission }
        set { loopSide.value.admission = newValue }
    }
}
