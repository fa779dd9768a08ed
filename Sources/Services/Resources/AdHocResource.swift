internal import FoundationEssentials
internal import HTTPTypes

/// The resource behind a one-off load (``RequestCoordinator/load(_:from:body:cachePolicy:decoder:logger:)``):
/// a request the caller already built, decoded as `Value`. Going through `Resource` gives
/// one-off loads the whole pipeline (decorators, retries, coalescing, events, the cache,
/// validation and decoding) with no second copy of it.
struct AdHocResource<Value: Decodable & Sendable>: Resource {
    typealias Response = Value

    /// The request as given; ``LoadPlan`` sends it instead of building one from ``endpoint``.
    let request: HTTPRequest
    let requestBody: RequestBody?
    let cachePolicy: CachePolicy
    let decoder: (any JSONBodyDecoder)?
    /// The URL without its query, for responders and logs that look at the endpoint.
    let endpoint: Endpoint
    /// `200..<300` for a one-off load; every status for an operation, whose caller reads it.
    var acceptableStatus: Range<Int> = 200..<300
    /// `nil`: the coordinator's.
    var retryPolicy: RetryPolicy?

    init(request: HTTPRequest, body: RequestBody?, cachePolicy: CachePolicy, decoder: (any JSONBodyDecoder)?) {
        self.request = request
        self.requestBody = body
        self.cachePolicy = cachePolicy
        self.decoder = decoder
        let target = request.path ?? "/"
        let path = target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
        endpoint = Endpoint("\(request.scheme ?? "https")://\(request.authority ?? "")", path: path)
    }

    var method: HTTPRequest.Method { request.method }
    var headers: HTTPFields { request.headerFields }
    var body: RequestBody? { requestBody }
    var jsonDecoder: any JSONBodyDecoder { decoder ?? CourierJSONDecoder() }
    /// Waiters that share a transfer share one decoded value only with the default decoder:
    /// two given decoders may read the same body differently.
    var sharesDecodedResponse: Bool { decoder == nil }
}
