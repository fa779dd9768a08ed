@_exported public import CourierCaching
@_exported public import CourierJSON
@_exported public import CourierServices
// One import for apps: `import Courier`. Test doubles stay in `CourierTesting`.
@_exported public import CourierTransport
