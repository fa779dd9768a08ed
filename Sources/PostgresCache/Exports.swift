// CourierPostgresCache: a cache tier the fleet shares, on PostgreSQL (the `PostgreSQL` trait).
#if PostgreSQL
@_exported public import CourierCaching
#endif
