// CourierServices: `Resource`, `load()` and the `RequestCoordinator` build on these.
@_exported public import CourierTransport
@_exported public import CourierCaching
@_exported public import CourierJSON
