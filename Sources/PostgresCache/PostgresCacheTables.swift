#if PostgreSQL
internal import CourierCaching
/// The names of the store's tables, qualified by ``PostgresCacheStore/Configuration/schema``
/// when one is set (else as the connection's search path finds them, `public` by default).
struct PostgresCacheTables: Sendable {
    /// The schema, when one is set, as written.
    let schema: String?
    /// The schema as statements name it (quoted), when one is set.
    var quotedSchema: String? { schema.map { "\"\($0)\"" } }
    /// The entries.
    let entries: String
    /// The fleet-collapsing leases.
    let leases: String
    /// The fleet-wide host pauses.
    let pauses: String
    /// The one-row table that holds the schema version.
    let version: String
    /// The `LISTEN`/`NOTIFY` channel of the store's notifications: one per schema, so that
    /// fleets in different schemas do not hear each other.
    let channel: String
    /// Why ``schema`` cannot be used, or nil.
    let problem: String?

    init(schema: String?) {
        self.schema = schema
        // Quoted, so that a reserved word (`user`, `default`) is a name too.
        let prefix = schema.map { "\"\($0)\"." } ?? ""
        entries = prefix + "courier_cache_entries"
        leases = prefix + "courier_cache_leases"
        pauses = prefix + "courier_host_pauses"
        version = prefix + "courier_cache_schema"
        // A channel name is an identifier: 63 bytes at most.
        channel =
            schema.map {
                "courier_cache_" + ($0.utf8.count <= 49 ? $0 : SHA256.hex(Array(SHA256.hash($0.utf8).prefix(8))))
            }
            ?? "courier_cache"
        problem = schema.flatMap(Self.problem(with:))
    }

    /// Names go into statements as written, quoted (a statement binds values, not names), so
    /// only a plain identifier is taken: lower-case ASCII letters, digits and underscores, not
    /// starting with a digit or `pg_` (PostgreSQL keeps those), 63 bytes at most (its limit).
    static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        let plain =
            !bytes.isEmpty && bytes.count <= 63 && !(0x30...0x39).contains(bytes[0]) && !name.hasPrefix("pg_")
            && bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
        guard !plain else { return nil }
        return "The PostgreSQL cache's schema name \"\(name)\" is not a plain identifier (lower-case letters, "
            + "digits and underscores, not starting with a digit or pg_, 63 bytes at most): set "
            + "Configuration.schema to one."
    }
}
#endif
