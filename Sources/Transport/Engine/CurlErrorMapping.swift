internal import CCurl

/// Turns curl's result codes into ``ServiceError`` codes.
enum CurlErrorMapping {
    static func error(for code: CURLcode, detail: String) -> ServiceError {
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let underlying = CurlError(code: Int(code.rawValue), message: message)
        return ServiceError(errorCode(for: code), message, underlying: underlying)
    }

    static func errorCode(for code: CURLcode) -> ServiceError.Code {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_CONNECT:
            return .cannotConnect
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dnsFailed
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .pinningFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_USE_SSL_FAILED, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            return .tlsFailed
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
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
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT:
            return .invalidRequest
        case CURLE_READ_ERROR, CURLE_WRITE_ERROR:
            return .fileAccess
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        default:
            return .networkFailed
        }
    }
}

/// curl's own code and message, kept as the `underlying` error of a ``ServiceError``.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode` value.
    public let code: Int
    /// curl's message (host and port at most; never headers or bodies).
    public let message: String

    public var description: String { "curl error \(code): \(message)" }
}
