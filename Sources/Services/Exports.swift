@_exported public import CourierCaching
@_exported public import CourierJSON
// CourierServices: `Resource`, `load()` and the `RequestCoordinator` build on these.
@_exported public import CourierTransport
