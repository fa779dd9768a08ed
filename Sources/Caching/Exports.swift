// CourierCaching: cache policies and the building blocks the tiered cache shares with the
// services layer (SHA-256 keys, HTTP dates).
@_exported public import HTTPTypes
