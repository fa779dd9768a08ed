internal import CCurl

#if canImport(Glibc)
internal import Glibc
#endif

/// The options ``Transfer/attach(to:errors:)`` sets for some transfers only, one bit each.
/// Every other option is set for every transfer, overwriting what the handle's last transfer
/// set; so a handle whose last footprint is part of the next one's needs no `curl_easy_reset`
/// (some 3,000 instructions, and the options set again after it). An option that `attach` sets
/// for some transfers only needs a bit here, in ``Transfer/footprint`` and at its `check`; the
/// debug check in `attach` catches a bit missing from one of the last two, not from all three.
struct OptionFootprint: OptionSet, Sendable {
    let rawValue: UInt32

    static let upload = OptionFootprint(rawValue: 1 << 0)
    static let customMethod = OptionFootprint(rawValue: 1 << 1)
    static let noBody = OptionFootprint(rawValue: 1 << 2)
    static let connectTimeout = OptionFootprint(rawValue: 1 << 3)
    static let totalTimeout = OptionFootprint(rawValue: 1 << 4)
    static let lowSpeed = OptionFootprint(rawValue: 1 << 5)
    static let pipeWait = OptionFootprint(rawValue: 1 << 6)
    static let caFile = OptionFootprint(rawValue: 1 << 7)
    static let pinnedKeys = OptionFootprint(rawValue: 1 << 8)
    static let clientCertificate = OptionFootprint(rawValue: 1 << 9)
    static let keyPassword = OptionFootprint(rawValue: 1 << 10)
    static let proxy = OptionFootprint(rawValue: 1 << 11)
    static let noProxy = OptionFootprint(rawValue: 1 << 12)
    static let unixSocket = OptionFootprint(rawValue: 1 << 13)
    static let progress = OptionFootprint(rawValue: 1 << 15)
    static let certificateStatus = OptionFootprint(rawValue: 1 << 16)
    static let revocationList = OptionFootprint(rawValue: 1 << 17)
    static let trailers = OptionFootprint(rawValue: 1 << 18)
    static let freshConnection = OptionFootprint(rawValue: 1 << 19)
    /// A handle in an unknown state: the next transfer resets it, whatever it sets.
    static let unknown = OptionFootprint(rawValue: .max)
}

extension Transfer {
    /// Whether this transfer must open a connection of its own and close it after: cleartext
    /// HTTP/2 with prior knowledge on a libcurl whose second request on such a connection fails
    /// (curl bug #10634, fixed in 8.0.0).
    var needsFreshConnection: Bool {
        request.options.httpVersion.mode == .http2PriorKnowledge && !request.url.hasPrefix("https:")
            && !CurlFeatures.current.reusesCleartextHTTP2Connections
    }

    /// The options this transfer's ``attach(to:errors:)`` will set beyond those every transfer
    /// sets. `attach` records what it sets and checks, in debug builds, that it matches.
    var footprint: OptionFootprint {
        let options = request.options
        var footprint: OptionFootprint = []
        if let body = request.body {
            footprint.insert(.upload)
            if request.method != .post { footprint.insert(.customMethod) }
            if body.streamed?.hasTrailers == true { footprint.insert(.trailers) }
        } else if request.method == .head {
            footprint.insert(.noBody)
        } else if request.method != .get {
            footprint.insert(.customMethod)
        }
        if options.connectTimeout != nil { footprint.insert(.connectTimeout) }
        if deadline != nil { footprint.insert(.totalTimeout) }
        if options.lowSpeedLimit != nil { footprint.insert(.lowSpeed) }
        if request.url.hasPrefix("https:") { footprint.insert(.pipeWait) }
        if needsFreshConnection { footprint.insert(.freshConnection) }
        let tls = options.tls
        if tls.certificateAuthorityFile != nil { footprint.insert(.caFile) }
        if tls.requiresOCSPStapling { footprint.insert(.certificateStatus) }
        if tls.certificateRevocationListFile != nil { footprint.insert(.revocationList) }
        if !tls.pinnedPublicKeys.isEmpty { footprint.insert(.pinnedKeys) }
        if let client = tls.clientCertificate {
            footprint.insert(.clientCertificate)
            if client.privateKeyPassword != nil { footprint.insert(.keyPassword) }
        }
        switch options.proxy.mode {
        case .none: footprint.formUnion([.proxy, .noProxy])
        case .environment: break
        case .url(_, let bypass):
            footprint.insert(.proxy)
            if !bypass.isEmpty { footprint.insert(.noProxy) }
        }
        if options.unixSocketPath != nil { footprint.insert(.unixSocket) }
        if options.progress != nil { footprint.insert(.progress) }
        return footprint
    }

    /// Configures `handle` for this transfer: URL, method, body, headers, timeouts, TLS,
    /// proxy and callbacks. `errors` is the handle's error buffer. Runs on the loop thread.
    func attach(to handle: UnsafeMutableRawPointer, errors errorBuffer: UnsafeMutablePointer<CChar>)
        throws(ServiceError)
    {
        easy = handle
        errorBuffer.initialize(to: 0)
        self.errorBuffer = errorBuffer
        let options = request.options
        let me = Unmanaged.passUnretained(self).toOpaque()
        var failed: CURLcode = CURLE_OK
        var recorded: OptionFootprint = []
        func check(_ code: CURLcode) { if code != CURLE_OK && failed == CURLE_OK { failed = code } }
        func check(_ code: CURLcode, _ part: OptionFootprint) {
            recorded.insert(part)
            check(code)
        }

        // The error buffer first: curl may write into it from any later call.
        check(courier_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        check(courier_easy_setopt_string(handle, CURLOPT_URL, request.url))
        check(courier_easy_setopt_pointer(handle, CURLOPT_PRIVATE, me))
        check(courier_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        check(courier_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(courier_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, transferWriteCallback))
        check(courier_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, me))
        check(courier_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, transferHeaderCallback))
        check(courier_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, me))
        check(courier_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        // Through a proxy, HTTPS goes through a CONNECT tunnel: the proxy's own head ("200
        // Connection established") must not reach the header callback as the response's.
        check(courier_easy_setopt_long(handle, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1))

        // Method and body.
        if let body = request.body {
            let source = try UploadSource(body, streamBufferSize: streamBufferSize)
            upload = source
            check(courier_easy_setopt_long(handle, CURLOPT_POST, 1), .upload)
            check(courier_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(source.length)))
            check(courier_easy_setopt_data_callback(handle, CURLOPT_READFUNCTION, transferReadCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_READDATA, me))
            check(courier_easy_setopt_seek_callback(handle, transferSeekCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_SEEKDATA, me))
            if body.streamed?.hasTrailers == true {
                check(courier_easy_setopt_trailer_callback(handle, transferTrailerCallback), .trailers)
                check(courier_easy_setopt_pointer(handle, CURLOPT_TRAILERDATA, me))
            }
            if request.method != .post {
                check(courier_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue), .customMethod)
            }
        } else if request.method == .head {
            check(courier_easy_setopt_long(handle, CURLOPT_NOBODY, 1), .noBody)
        } else if request.method != .get {
            check(courier_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue), .customMethod)
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
            check(courier_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connect.milliseconds), .connectTimeout)
        }
        if let deadline {
            // What is left of the total timeout after waiting for admission (at least 1 ms).
            check(courier_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, (deadline - .now).milliseconds), .totalTimeout)
        }
        // The idle limit is the loop's own check (``IdleWatch``), not curl's speed average.
        if let lowSpeed = options.lowSpeedLimit {
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, lowSpeed.bytesPerSecond), .lowSpeed)
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, lowSpeed.duration.wholeSecondsRoundedUp))
        }

        // HTTP version. Request trailers need HTTP/1.1's chunked framing: curl sends none on HTTP/2.
        let sendsTrailers = request.body?.streamed?.hasTrailers == true
        if sendsTrailers, options.httpVersion.mode == .http2PriorKnowledge {
            throw ServiceError(
                .invalidRequest, "A request body with trailer fields is sent over HTTP/1.1, but HTTP/2 was required.")
        }
        switch options.httpVersion.mode {
        case .automatic where sendsTrailers, .http1:
            check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_1_1))
        case .automatic: check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2tls))
        case .http2PriorKnowledge:
            check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2_prior))
        }
        if needsFreshConnection {
            check(courier_easy_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1), .freshConnection)
            check(courier_easy_setopt_long(handle, CURLOPT_FORBID_REUSE, 1))
        }
        // Waiting for a connection that may multiplex only pays over TLS (HTTP/2 by ALPN); on
        // cleartext it would hold every request to a new host until the first one's response.
        if request.url.hasPrefix("https:") {
            check(courier_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1), .pipeWait)
        }

        // TLS.
        let tls = options.tls
        check(courier_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, tls.verifiesPeer ? 1 : 0))
        check(courier_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, tls.verifiesPeer ? 2 : 0))
        if let caFile = tls.certificateAuthorityFile {
            check(courier_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), .caFile)
        }
        if tls.requiresOCSPStapling {
            check(courier_easy_setopt_long(handle, CURLOPT_SSL_VERIFYSTATUS, 1), .certificateStatus)
        }
        if let revocationList = tls.certificateRevocationListFile {
            check(courier_easy_setopt_string(handle, CURLOPT_CRLFILE, revocationList), .revocationList)
        }
        if !tls.pinnedPublicKeys.isEmpty {
            check(
                courier_easy_setopt_string(
                    handle, CURLOPT_PINNEDPUBLICKEY, tls.pinnedPublicKeys.joined(separator: ";")), .pinnedKeys)
        }
        if let client = tls.clientCertificate {
            check(courier_easy_setopt_string(handle, CURLOPT_SSLCERT, client.certificateFile), .clientCertificate)
            check(courier_easy_setopt_string(handle, CURLOPT_SSLKEY, client.privateKeyFile))
            if let password = client.privateKeyPassword {
                check(courier_easy_setopt_string(handle, CURLOPT_KEYPASSWD, password), .keyPassword)
            }
        }

        // Proxy: an empty string makes curl ignore the environment variables.
        switch options.proxy.mode {
        case .none:
            check(courier_easy_setopt_string(handle, CURLOPT_PROXY, ""), .proxy)
            // Set, so that curl does not read `no_proxy` and `NO_PROXY` from the environment for
            // every transfer (two scans of the environment).
            check(courier_easy_setopt_string(handle, CURLOPT_NOPROXY, ""), .noProxy)
        case .environment: break
        case .url(let url, let bypass):
            check(courier_easy_setopt_string(handle, CURLOPT_PROXY, url), .proxy)
            if !bypass.isEmpty {
                check(courier_easy_setopt_string(handle, CURLOPT_NOPROXY, bypass.joined(separator: ",")), .noProxy)
            }
        }
        if let socket = options.unixSocketPath {
            check(courier_easy_setopt_string(handle, CURLOPT_UNIX_SOCKET_PATH, socket), .unixSocket)
        }
        // `maximumBodySize` is checked by the transfer itself (see `headComplete`), not with
        // CURLOPT_MAXFILESIZE: curl applies that to the announced length even when no body
        // follows (a HEAD, a 304), failing a HEAD of a large file.
        if options.progress != nil {
            check(courier_easy_setopt_long(handle, CURLOPT_NOPROGRESS, 0), .progress)
            check(courier_easy_setopt_xferinfo_callback(handle, transferProgressCallback))
            check(courier_easy_setopt_pointer(handle, CURLOPT_XFERINFODATA, me))
        }
        assert(failed != CURLE_OK || recorded == footprint, "attach(to:errors:) and footprint disagree")
        if failed != CURLE_OK {
            throw ServiceError(
                .invalidRequest, "curl rejected an option: \(String(cString: curl_easy_strerror(failed))).")
        }
    }

}

// MARK: - C callbacks

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> Transfer {
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
}

let transferWriteCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
}

let transferHeaderCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
}

let transferReadCallback: courier_data_callback = { data, size, count, userdata in
    transfer(userdata).readBody(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
}

let transferSeekCallback: courier_seek_callback = { userdata, offset, origin in
    guard origin == SEEK_SET else { return Int32(courier_seekfunc_fail) }
    return transfer(userdata).seekBody(to: Int64(offset))
}

let transferTrailerCallback: courier_trailer_callback = { list, userdata in
    transfer(userdata).appendTrailers(to: list!)
}

let transferProgressCallback: courier_xferinfo_callback = { userdata, dlTotal, dlNow, ulTotal, ulNow in
    transfer(userdata).progress(
        received: Int64(dlNow), expectedReceive: Int64(dlTotal), sent: Int64(ulNow), expectedSend: Int64(ulTotal))
    return 0
}
