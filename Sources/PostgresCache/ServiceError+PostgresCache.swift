#if PostgreSQL
public import CourierCore

extension ServiceError.Code {
    /// The PostgreSQL cache store could not do what was asked: the server refused the query or
    /// the connection, or the table belongs to a newer version of the store. The tiered cache
    /// reports it as a `storeFailed` event; loads carry on from the network.
    public static let cacheStoreFailed = ServiceError.Code(
        "cacheStoreFailed", retryable: true,
        suggestion: "Check that the PostgreSQL server is up and reachable; the store reconnects on its own.")
}
#endif
