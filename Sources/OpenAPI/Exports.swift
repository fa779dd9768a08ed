// CourierOpenAPI: a swift-openapi-runtime ClientTransport over a RequestCoordinator, as a
// separate product, so that apps without generated clients never build OpenAPIRuntime.
@_exported public import CourierServices
@_exported public import OpenAPIRuntime
