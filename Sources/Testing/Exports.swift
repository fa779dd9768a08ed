// CourierTesting: test doubles for Courier users' own tests.
@_exported public import CourierServices
