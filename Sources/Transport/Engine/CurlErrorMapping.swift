internal import CCurl

/// Turns curl's result codes into `ServiceError` codes that name the party at fault.
///
/// The caller's fault (a bad URL or option) is `invalidRequest`; the server's (a reply that
/// breaks HTTP) is `malformedResponse`, `headersTooLarge` and the like, never retried; the
/// network's (resets, timeouts, refused connections) is retryable. A few curl codes mean
/// different things at different stages of a transfer, so the stage is part of the input.
enum CurlErrorMapping {
    /// How far a transfer got before it failed.
    enum Stage: Sendable {
        /// The request was not (completely) sent.
        case sending
        /// The request went out; the response head is not complete.
        case awaitingHead
        /// The head arrived; the body was being received.
        case receivingBody
    }

    /// The error for curl's `code`.
    static func error(for code: CURLcode, detail: String, stage: Stage) -> ServiceError {
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let underlying = CurlError(code: Int(code.rawValue), message: message)
        let mapped = errorCode(for: code, detail: message, stage: stage)
        let explained =
            mapped == .headersTooLarge && code == CURLE_OUT_OF_MEMORY
            ? "A response header line exceeds curl's limit of 100 KiB." : message
        return ServiceError(mapped, explained, underlying: underlying)
    }

    static func errorCode(for code: CURLcode, detail: String, stage: Stage) -> ServiceError.Code {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            // Before the request went out: a scheme curl will not speak (the caller's). After:
            // a reply that is not HTTP/1.x or 2 at all (HTTP/0.9, a garbage status line).
            return stage == .sending ? .invalidRequest : .malformedResponse
        case CURLE_OUT_OF_MEMORY:
            // curl refuses a header line over 100 KiB with this code.
            return stage == .awaitingHead ? .headersTooLarge : .unknown
        case CURLcode(rawValue: 100):  // CURLE_TOO_LARGE (curl 8.6 and later): a header over curl's limit.
            return .headersTooLarge
        case CURLE_RECV_ERROR:
            // A chunk size that is not hex or overflows is the server's framing error, a head over
            // curl's 300 KiB total is too large; anything else read from the socket failed (a reset).
            // curl keeps a trailer line in a buffer of its own capped at 4 KiB (curl 7.88's
            // DYN_H1_TRAILER) and reports a longer one as "Out of memory in chunked-encoding".
            let detail = detail.lowercased()
            if detail.contains("chunk") && detail.contains("out of memory") { return .headersTooLarge }
            if detail.contains("chunk") { return .malformedResponse }
            if detail.contains("too large") && detail.contains("header") { return .headersTooLarge }
            return .connectionClosed
        case CURLE_BAD_FUNCTION_ARGUMENT where stage == .receivingBody:
            // After the head, only the trailer section can make curl's header store refuse a
            // line (curl 7.88 files trailers before the header callback sees them): a trailer
            // with a NUL byte.
            return .malformedResponse
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_CONNECT, CURLE_QUIC_CONNECT_ERROR, CURLE_PROXY, CURLE_NO_CONNECTION_AVAILABLE:
            return .cannotConnect
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dnsFailed
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .pinningFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
            CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            return .tlsFailed
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR:
            return .connectionClosed
        case CURLE_PARTIAL_FILE:
            return .truncatedBody
        case CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_BAD_CONTENT_ENCODING,
            CURLE_RANGE_ERROR, CURLE_HTTP3:
            return .malformedResponse
        case CURLE_FILESIZE_EXCEEDED:
            return .responseTooLarge
        case CURLE_TOO_MANY_REDIRECTS:
            return .tooManyRedirects
        case CURLE_URL_MALFORMAT, CURLE_BAD_FUNCTION_ARGUMENT, CURLE_NOT_BUILT_IN, CURLE_UNKNOWN_OPTION,
            CURLE_SETOPT_OPTION_SYNTAX, CURLE_BAD_DOWNLOAD_RESUME, CURLE_INTERFACE_FAILED:
            return .invalidRequest
        case CURLE_READ_ERROR, CURLE_WRITE_ERROR, CURLE_FILE_COULDNT_READ_FILE:
            return .fileAccess
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        case CURLE_FAILED_INIT, CURLE_RECURSIVE_API_CALL, CURLE_SEND_FAIL_REWIND:
            // Courier's own or the process's trouble: retrying would fail the same way.
            return .unknown
        default:
            // Protocols Courier never enables (FTP, SSH, LDAP, ...) and codes newer than this
            // table: a network failure, retryable.
            return .networkFailed
        }
    }
}

/// curl's own code and message, kept as the `underlying` error of a `ServiceError`.
package struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode` value.
    package let code: Int
    /// curl's message (host and port at most; never headers or bodies).
    package let message: String

    package var description: String { "curl error \(code): \(message)" }
}
