// CourierLifecycle: a coordinator and its transport as a swift-service-lifecycle `Service`.
@_exported public import CourierServices
@_exported public import ServiceLifecycle
