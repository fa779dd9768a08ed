internal import CCurl
internal import CourierCore

extension Transfer {
    /// What curl measured of the transfer (loop thread, the easy handle still attached).
    func readMetrics() -> TransferMetrics {
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

extension Duration {
    /// Whole seconds, rounded up, at least 1 (curl's speed check counts in seconds).
    var wholeSecondsRoundedUp: Int { (milliseconds + 999) / 1000 }

    /// Whole milliseconds, rounded up so that a tiny timeout never becomes "none" (0).
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int(max(1, millis + (attoseconds % 1_000_000_000_000_000 > 0 ? 1 : 0)))
    }
}
