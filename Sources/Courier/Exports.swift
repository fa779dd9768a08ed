// One import for apps: `import Courier`. Test doubles stay in `CourierTesting`.
@_exported public import CourierTransport
@_exported public import CourierCaching
@_exported public import CourierServices
@_exported public import CourierJSON
