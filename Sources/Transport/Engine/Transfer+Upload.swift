internal import CCurl
internal import CourierCore
internal import HTTPTypes

/// The request body's side of a transfer: curl's read, seek and trailer callbacks, on the
/// loop thread. The bytes come from the transfer's ``UploadSource``.
extension Transfer {
    func readBody(into target: UnsafeMutableRawBufferPointer) -> Int {
        touch()
        guard let upload else {
            abortError = ServiceError(.fileAccess, "Reading the request body failed.")
            return courier_readfunc_abort
        }
        switch upload.read(into: target) {
        case .bytes(let count):
            return count
        case .pause:
            isPaused = true
            return courier_readfunc_pause
        case .failed(let error):
            abortError = error
            return courier_readfunc_abort
        }
    }

    func seekBody(to offset: Int64) -> Int32 {
        if upload?.seek(to: offset) == true { return Int32(courier_seekfunc_ok) }
        if upload?.channel != nil {
            abortError = UploadSource.notReplayable(
                "The request had to be sent again on a new connection after part of its body was sent")
        }
        return Int32(courier_seekfunc_fail)
    }

    /// curl's trailer callback, once the chunked body has ended: appends the streamed body's
    /// trailer fields to `list` (curl sends them and frees the list).
    func appendTrailers(to list: UnsafeMutablePointer<UnsafeMutablePointer<curl_slist>?>) -> Int32 {
        guard let channel = upload?.channel else { return Int32(courier_trailerfunc_ok) }
        for field in channel.trailers {
            guard let appended = curl_slist_append(list.pointee, "\(field.name.rawName): \(field.value)") else {
                abortError = ServiceError(.invalidRequest, "Could not allocate the request's trailer fields.")
                return Int32(courier_trailerfunc_abort)
            }
            list.pointee = appended
        }
        return Int32(courier_trailerfunc_ok)
    }
}
