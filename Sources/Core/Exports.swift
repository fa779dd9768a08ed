// CourierCore: what every Courier module shares, with no curl and no zlib: `ServiceError`,
// the `HTTPTransport` seam and `TransportResponse`, `RequestBody`, `TransferOptions`,
// `TransferMetrics`, `RedirectPolicy`, progress, and request validation.
@_exported public import HTTPTypes
