// CourierCaching: the tiered cache (memory LRU + disk) arrives with the caching issue.
// Until then the module re-exports the currency types it will be built on.
@_exported public import HTTPTypes
