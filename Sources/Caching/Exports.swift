@_exported public import CourierCore
// CourierCaching: cache policies, the tiered cache (memory LRU + disk) and the HTTP caching
// rules (RFC 9111) the services layer applies.
@_exported public import HTTPTypes
