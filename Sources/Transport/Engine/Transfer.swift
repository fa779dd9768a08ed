internal import CCurl
internal import FoundationEssentials
internal import HTTPTypes
internal import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

/// What one hop of a request produced.
struct HopResult: @unchecked Sendable {
    // @unchecked: `body` is an immutable Data that owns its buffer; nothing else is shared.
    var head: HTTPResponse
    /// The body as received (still compressed if it was), for buffered transfers.
    var body: Data
    var metrics: TransferMetrics
    /// Set when the hop ended at a redirect the transport should follow.
    var redirectURL: String?
    /// For streamed transfers: where the body chunks arrive.
    var channel: BodyChannel?
}

/// One request's state while curl runs it.
///
/// Thread-safety invariant (why `@unchecked Sendable` is sound): the creating task sets
/// `delivery` before handing the transfer to the loop through its mutex-protected inbox;
/// from then on every stored `var` is read and written only on the loop thread (in
/// `CurlEventLoop` and in curl's callbacks, which curl calls on that thread). The only
/// state touched from other threads is `cancelRequested`, an atomic.
final class Transfer: @unchecked Sendable {
    enum Delivery {
        /// Resume once, at the end, with the whole body in memory.
        case buffered(CheckedContinuation<HopResult, any Error>)
        /// Resume once the head is known; the body then flows through the channel.
        case streamed(CheckedContinuation<HopResult, any Error>?, BodyChannel)
    }

    let request: PreparedRequest
    private let cancelRequested = Atomic<Bool>(false)

    var delivery: Delivery?
    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var parser: ResponseHeadParser
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    private var count = 0
    private var discardsBody = false
    private var abortError: ServiceError?
    private var upload: UploadSource?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(courier_error_size))

    init(request: PreparedRequest) {
        self.request = request
        parser = ResponseHeadParser(limit: request.options.maximumHeaderSize)
        errorBuffer.initialize(to: 0)
    }

    deinit {
        buffer?.deallocate()
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// Marks the transfer cancelled; the loop removes it on its next turn.
    func requestCancel() { cancelRequested.store(true, ordering: .releasing) }
    var isCancelRequested: Bool { cancelRequested.load(ordering: .acquiring) }

    // MARK: setup (loop thread)

    func attach(to handle: UnsafeMutableRawPointer) throws(ServiceError) {
        easy = handle
        let options = request.options
        let me = Unmanaged.passUnretained(self).toOpaque()
        var failed: CURLcode = CURLE_OK
        func check(_ code: CURLcode) { if code != CURLE_OK && failed == CURLE_OK { failed = code } }

        check(courier_easy_setopt_string(handle, CURLOPT_URL, request.url))
        check(courier_easy_setopt_pointer(handle, CURLOPT_PRIVATE, me))
        check(courier_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        check(courier_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(courier_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        check(courier_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, transferWriteCallback))
        check(courier_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, me))
        check(courier_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, transferHeaderCallback))
        check(courier_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, me))
        check(courier_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))

        // Method and body.
        if let body = request.body {
            let source = try UploadSource(body)
            upload = source
            check(courier_easy_setopt_long(handle, CURLOPT_POST, 1))
            check(courier_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(source.length)))
            check(courier_easy_setopt_data_callback(handle, CURLOPT_READFUNCTION, transferReadCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_READDATA, me))
            check(courier_easy_setopt_seek_callback(handle, transferSeekCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_SEEKDATA, me))
            if request.method != .post {
                check(courier_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue))
            }
        } else if request.method == .head {
            check(courier_easy_setopt_long(handle, CURLOPT_NOBODY, 1))
        } else if request.method != .get {
            check(courier_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue))
        }

        for line in request.headerLines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw ServiceError(.invalidRequest, "Could not allocate the header list.")
            }
            headerList = appended
        }
        check(courier_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))

        // Timeouts.
        if let connect = options.connectTimeout {
            check(courier_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connect.milliseconds))
        }
        if let total = options.timeout {
            check(courier_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, total.milliseconds))
        }
        if let lowSpeed = options.lowSpeedLimit {
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, lowSpeed.bytesPerSecond))
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, lowSpeed.duration.milliseconds / 1000)))
        }

        // HTTP version.
        switch options.httpVersion.mode {
        case .automatic: check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2tls))
        case .http1: check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_1_1))
        case .http2PriorKnowledge:
            check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2_prior))
        }
        check(courier_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1))

        // TLS.
        let tls = options.tls
        check(courier_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, tls.verifiesPeer ? 1 : 0))
        check(courier_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, tls.verifiesPeer ? 2 : 0))
        if let caFile = tls.certificateAuthorityFile {
            check(courier_easy_setopt_string(handle, CURLOPT_CAINFO, caFile))
        }
        if !tls.pinnedPublicKeys.isEmpty {
            check(courier_easy_setopt_string(handle, CURLOPT_PINNEDPUBLICKEY, tls.pinnedPublicKeys.joined(separator: ";")))
        }
        if let client = tls.clientCertificate {
            check(courier_easy_setopt_string(handle, CURLOPT_SSLCERT, client.certificateFile))
            check(courier_easy_setopt_string(handle, CURLOPT_SSLKEY, client.privateKeyFile))
            if let password = client.privateKeyPassword {
                check(courier_easy_setopt_string(handle, CURLOPT_KEYPASSWD, password))
            }
        }

        // Proxy: an empty string makes curl ignore the environment variables.
        switch options.proxy.mode {
        case .none: check(courier_easy_setopt_string(handle, CURLOPT_PROXY, ""))
        case .environment: break
        case .url(let url, let bypass):
            check(courier_easy_setopt_string(handle, CURLOPT_PROXY, url))
            if !bypass.isEmpty {
                check(courier_easy_setopt_string(handle, CURLOPT_NOPROXY, bypass.joined(separator: ",")))
            }
        }
        if let socket = options.unixSocketPath {
            check(courier_easy_setopt_string(handle, CURLOPT_UNIX_SOCKET_PATH, socket))
        }
        if let limit = options.maximumBodySize {
            check(courier_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit)))
        }
        if options.progress != nil {
            check(courier_easy_setopt_long(handle, CURLOPT_NOPROGRESS, 0))
            check(courier_easy_setopt_xferinfo_callback(handle, transferProgressCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_XFERINFODATA, me))
        }
        if failed != CURLE_OK {
            throw ServiceError(
                .invalidRequest, "curl rejected an option: \(String(cString: curl_easy_strerror(failed))).")
        }
    }

    // MARK: callbacks (loop thread)

    fileprivate func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        do {
            if try parser.consume(line) { headComplete() }
            return line.count
        } catch {
            abortError = error
            return 0
        }
    }

    private func headComplete() {
        guard let head = parser.response else { return }
        if request.stopsAtRedirect, [301, 302, 303, 307, 308].contains(head.status.code),
            head.headerFields[.location] != nil
        {
            discardsBody = true
            return
        }
        switch delivery {
        case .buffered:
            if let length = parser.contentLength, length > 0 {
                let limit = Int64(request.options.maximumBodySize ?? Int.max)
                reserve(Int(min(length, limit)))
            }
        case .streamed(let continuation?, let channel):
            delivery = .streamed(nil, channel)
            continuation.resume(returning: HopResult(head: head, body: Data(), metrics: TransferMetrics(), channel: channel))
        case .streamed(nil, _), nil:
            break
        }
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
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
            case .pause: return courier_writefunc_pause
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
        let grown = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        if let buffer {
            grown.copyMemory(from: buffer, byteCount: count)
            buffer.deallocate()
        }
        buffer = grown
        capacity = size
    }

    fileprivate func readBody(into target: UnsafeMutableRawBufferPointer) -> Int {
        guard let upload, let count = upload.read(into: target) else {
            abortError = ServiceError(.fileAccess, "Reading the request body failed.")
            return courier_readfunc_abort
        }
        return count
    }

    fileprivate func seekBody(to offset: Int64) -> Int32 {
        upload?.seek(to: offset) == true ? Int32(courier_seekfunc_ok) : Int32(courier_seekfunc_fail)
    }

    fileprivate func progress(received: Int64, expectedReceive: Int64, sent: Int64, expectedSend: Int64) {
        guard !discardsBody else { return }
        request.options.progress?.report(
            received: received, expectedReceive: expectedReceive > 0 ? expectedReceive : nil,
            sent: sent, expectedSend: expectedSend > 0 ? expectedSend : (upload?.length))
    }

    // MARK: completion (loop thread)

    /// Finishes the transfer with curl's result. The easy handle is still attached.
    func complete(with code: CURLcode) {
        var outcome: Result<HopResult, ServiceError>
        if let abortError {
            outcome = .failure(abortError)
        } else if code != CURLE_OK {
            outcome = .failure(CurlErrorMapping.error(for: code, detail: String(cString: errorBuffer)))
        } else if let head = parser.response {
            let metrics = readMetrics()
            var redirect: String?
            if discardsBody, let easy {
                var pointer: UnsafePointer<CChar>?
                if courier_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer {
                    redirect = String(cString: pointer)
                }
                if redirect == nil {
                    outcome = .failure(ServiceError(.malformedResponse, "The redirect's Location is not a valid URL."))
                    deliver(outcome)
                    return
                }
            }
            outcome = .success(HopResult(head: head, body: takeBody(), metrics: metrics, redirectURL: redirect))
            if !discardsBody, let reporter = request.options.progress {
                reporter.report(
                    received: metrics.bytesReceived, expectedReceive: metrics.bytesReceived,
                    sent: metrics.bytesSent, expectedSend: metrics.bytesSent)
            }
        } else {
            outcome = .failure(ServiceError(.connectionClosed, "The connection closed before a response arrived."))
        }
        deliver(outcome)
    }

    /// Fails the transfer without curl's involvement (cancelled, shut down, setup failed).
    func fail(_ error: ServiceError) { deliver(.failure(error)) }

    private func deliver(_ outcome: Result<HopResult, ServiceError>) {
        switch delivery {
        case .buffered(let continuation):
            continuation.resume(with: outcome.mapError { $0 as any Error })
        case .streamed(let continuation?, let channel):
            continuation.resume(with: outcome.mapError { $0 as any Error })
            if case .success(let hop) = outcome, hop.redirectURL == nil {
                channel.finish(.success(hop.metrics))
            }
        case .streamed(nil, let channel):
            channel.finish(outcome.map(\.metrics))
        case nil:
            break
        }
        delivery = nil
    }

    /// Releases what belonged to this hop before the handle goes back to the pool.
    func detach() {
        easy = nil
        upload = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    private func takeBody() -> Data {
        guard let buffer, count > 0 else { return Data() }
        self.buffer = nil
        let body = Data(bytesNoCopy: buffer, count: count, deallocator: .custom { pointer, _ in pointer.deallocate() })
        capacity = 0
        count = 0
        return body
    }

    private func readMetrics() -> TransferMetrics {
        var metrics = TransferMetrics()
        guard let easy else { return metrics }
        func micros(_ info: CURLINFO) -> Duration {
            var value: curl_off_t = 0
            _ = courier_easy_getinfo_off(easy, info, &value)
            return .microseconds(Int64(value))
        }
        func long(_ info: CURLINFO) -> Int {
            var value = 0
            _ = courier_easy_getinfo_long(easy, info, &value)
            return value
        }
        func off(_ info: CURLINFO) -> Int64 {
            var value: curl_off_t = 0
            _ = courier_easy_getinfo_off(easy, info, &value)
            return Int64(value)
        }
        metrics.nameLookup = micros(CURLINFO_NAMELOOKUP_TIME_T)
        metrics.connect = micros(CURLINFO_CONNECT_TIME_T)
        metrics.tlsHandshake = micros(CURLINFO_APPCONNECT_TIME_T)
        metrics.firstByte = micros(CURLINFO_STARTTRANSFER_TIME_T)
        metrics.total = micros(CURLINFO_TOTAL_TIME_T)
        metrics.bytesReceived = off(CURLINFO_SIZE_DOWNLOAD_T)
        metrics.bytesSent = off(CURLINFO_SIZE_UPLOAD_T)
        metrics.newConnections = long(CURLINFO_NUM_CONNECTS)
        metrics.localPort = long(CURLINFO_LOCAL_PORT)
        switch long(CURLINFO_HTTP_VERSION) {
        case CURL_HTTP_VERSION_1_0: metrics.httpVersion = "1.0"
        case CURL_HTTP_VERSION_1_1: metrics.httpVersion = "1.1"
        case CURL_HTTP_VERSION_2_0: metrics.httpVersion = "2"
        case CURL_HTTP_VERSION_3: metrics.httpVersion = "3"
        default: metrics.httpVersion = ""
        }
        return metrics
    }
}

// MARK: - C callbacks

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> Transfer {
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
}

private let transferWriteCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

private let transferHeaderCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
}

private let transferReadCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).readBody(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
}

private let transferSeekCallback: courier_seek_callback = { userdata, offset, origin in
    guard origin == SEEK_SET else { return Int32(courier_seekfunc_fail) }
    return transfer(userdata).seekBody(to: Int64(offset))
}

private let transferProgressCallback: courier_xferinfo_callback = { userdata, dlTotal, dlNow, ulTotal, ulNow in
    transfer(userdata).progress(
        received: Int64(dlNow), expectedReceive: Int64(dlTotal), sent: Int64(ulNow), expectedSend: Int64(ulTotal))
    return 0
}

extension Duration {
    /// Whole milliseconds, rounded up so that a tiny timeout never becomes "none" (0).
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int(max(1, millis + (attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0)))
    }
}
