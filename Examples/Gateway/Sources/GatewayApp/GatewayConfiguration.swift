public import Courier
import Foundation

/// What the gateway needs from its deployment, read from environment variables by
/// ``init(environment:)``.
public struct GatewayConfiguration: Sendable {
    /// Where the gateway listens.
    public var host = "127.0.0.1"
    public var port = 8080
    /// Which catalog the gateway calls (`CATALOG_ENVIRONMENT`: production, staging, development).
    public var catalogEnvironment = BackendEnvironment.development
    /// The catalog's URL in development (`CATALOG_URL`).
    public var catalogDevelopmentURL = "http://127.0.0.1:9090/v1"
    /// The token endpoint (`CATALOG_TOKEN_URL`) and the gateway's client credentials
    /// (`CATALOG_CLIENT_ID`, `CATALOG_CLIENT_SECRET`).
    public var tokenURL = "http://127.0.0.1:9090/oauth/token"
    public var clientID = "gateway"
    public var clientSecret = ""
    /// The disk tier of the HTTP cache (`CACHE_DIRECTORY`); nil keeps the cache in memory only.
    public var cacheDirectory: String?
    /// How long a graceful shutdown waits for calls to the catalog in flight.
    public var drainTimeout: Duration = .seconds(10)
    /// The longest the gateway works on one request (`REQUEST_DEADLINE_MS`), calls to the
    /// catalog included; a caller's `X-Deadline-Ms` may make it shorter.
    public var requestDeadline: Duration = .seconds(5)

    public init() {}

    /// Reads the settings above from `environment` (the process's, in `main`), keeping the
    /// defaults for what is not set.
    public init(environment: [String: String]) {
        self.init()
        if let host = environment["HOST"] { self.host = host }
        if let port = environment["PORT"].flatMap(Int.init) { self.port = port }
        if let name = environment["CATALOG_ENVIRONMENT"] { catalogEnvironment = BackendEnvironment(name) }
        if let url = environment["CATALOG_URL"] { catalogDevelopmentURL = url }
        if let url = environment["CATALOG_TOKEN_URL"] { tokenURL = url }
        if let id = environment["CATALOG_CLIENT_ID"] { clientID = id }
        if let secret = environment["CATALOG_CLIENT_SECRET"] { clientSecret = secret }
        cacheDirectory = environment["CACHE_DIRECTORY"]
        if let milliseconds = environment["REQUEST_DEADLINE_MS"].flatMap(Int.init), milliseconds > 0 {
            requestDeadline = .milliseconds(milliseconds)
        }
    }
}
