internal import CCurl
internal import FoundationEssentials
internal import HTTPTypes

/// How a transfer ends, on the loop thread: curl's result becomes a ``HopResult`` or a typed
/// error, delivered once to the task that waits (a buffered hop) or to the body's channel (a
/// streamed one); then the hop's resources go before the handle returns to the pool.
extension Transfer {
    /// Finishes the transfer with curl's result. The easy handle is still attached.
    func complete(with code: CURLcode) {
        var outcome: Result<HopResult, ServiceError>
        if let abortError {
            outcome = .failure(abortError)
        } else if code != CURLE_OK {
            outcome = .failure(
                CurlErrorMapping.error(
                    for: code, detail: errorBuffer.map { String(cString: $0) } ?? "", stage: stage))
        } else if let response = head.response {
            let metrics = readMetrics()
            var redirect: String?
            if discardsBody, let easy {
                var pointer: UnsafePointer<CChar>?
                if courier_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer {
                    redirect = String(cString: pointer)
                }
                if redirect == nil {
                    // curl resolves only targets it may follow (http and https).
                    deliver(
                        .failure(
                            RedirectHop.unfollowable(location: response.headerFields[.location], response: response)))
                    return
                }
            }
            outcome = .success(
                HopResult(
                    head: response, body: takeBody(), metrics: metrics, redirectURL: redirect,
                    mayBeEncoded: head.hasContentEncoding, trailers: trailers?.fields ?? HTTPFields()))
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

    /// How far the transfer got, for telling whose fault a failure is.
    private var stage: CurlErrorMapping.Stage {
        if head.isComplete { return .receivingBody }
        var requestBytes = 0
        if let easy { _ = courier_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestBytes) }
        return requestBytes > 0 ? .awaitingHead : .sending
    }

    /// Fails the transfer without curl's involvement (cancelled, shut down, setup failed).
    func fail(_ error: ServiceError) { deliver(.failure(error)) }

    private func deliver(_ outcome: Result<HopResult, ServiceError>) {
        switch delivery {
        case .buffered(let continuation):
            TSanHandoff.release(self)
            continuation.resume(with: outcome.mapError { $0 as any Error })
        case .streamed(let continuation?, let channel):
            TSanHandoff.release(self)
            continuation.resume(with: outcome.mapError { $0 as any Error })
            if case .success(let hop) = outcome, hop.redirectURL == nil {
                channel.finish(.success(hop.metrics), trailers: hop.trailers)
            }
        case .streamed(nil, let channel):
            channel.finish(outcome.map(\.metrics), trailers: (try? outcome.get())?.trailers ?? HTTPFields())
        case nil:
            break
        }
        delivery = nil
    }

    /// Releases what belonged to this hop before the handle goes back to the pool.
    func detach() {
        easy = nil
        errorBuffer = nil
        upload = nil
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    private func takeBody() -> Data {
        guard let buffer, count > 0 else { return Data() }
        self.buffer = nil
        let pool = bodyBuffers
        let size = capacity
        let body = Data(
            bytesNoCopy: buffer, count: count, deallocator: .custom { pointer, _ in pool.give(pointer, capacity: size) }
        )
        capacity = 0
        count = 0
        return body
    }
}
