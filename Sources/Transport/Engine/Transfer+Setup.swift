internal import CCurl
#if canImport(Glibc)
internal import Glibc
#endif

extension Transfer {
    /// Configures `handle` for this transfer: URL, method, body, headers, timeouts, TLS,
    /// proxy and callbacks. Runs on the loop thread.
    func attach(to handle: UnsafeMutableRawPointer) throws(ServiceError) {
        easy = handle
        let errorBuffer = self.errorBuffer ?? UnsafeMutablePointer<CChar>.allocate(capacity: Int(courier_error_size))
        errorBuffer.initialize(to: 0)
        self.errorBuffer = errorBuffer
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
        if let deadline {
            // What is left of the total timeout after waiting for admission (at least 1 ms).
            check(courier_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, (deadline - .now).milliseconds))
        }
        if let lowSpeed = options.lowSpeedLimit {
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, lowSpeed.bytesPerSecond))
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, lowSpeed.duration.wholeSecondsRoundedUp))
        } else if let idle = options.idleTimeout {
            // Below 1 byte/s for the whole window means not one byte arrived or left in it.
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1))
            check(courier_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, idle.wholeSecondsRoundedUp))
        }

        // HTTP version.
        switch options.httpVersion.mode {
        case .automatic: check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2tls))
        case .http1: check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_1_1))
        case .http2PriorKnowledge:
            check(courier_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, courier_http_version_2_prior))
        }
        // Waiting for a connection that may multiplex only pays over TLS (HTTP/2 by ALPN); on
        // cleartext it would hold every request to a new host until the first one's response.
        if request.url.hasPrefix("https:") {
            check(courier_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1))
        }

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

let transferProgressCallback: courier_xferinfo_callback = { userdata, dlTotal, dlNow, ulTotal, ulNow in
    transfer(userdata).progress(
        received: Int64(dlNow), expectedReceive: Int64(dlTotal), sent: Int64(ulNow), expectedSend: Int64(ulTotal))
    return 0
}

