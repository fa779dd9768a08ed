public import Courier
public import CourierLifecycle
public import Hummingbird
public import Logging
public import Prometheus
public import Tracing

/// The gateway: a Hummingbird server whose routes call the catalog through one Courier
/// coordinator, run with it in one service group.
///
/// The coordinator resolves the catalog in the configured environment, puts a bearer token on
/// every catalog request (refreshed once for a storm of 401s), keeps products in an HTTP cache
/// (memory, then disk when a directory is configured), retries what is safe to retry, and
/// records a client span and metrics per call. Each request has a deadline
/// (``DeadlineMiddleware``) that bounds its calls to the catalog.
public struct Gateway: Sendable {
    /// The coordinator and its transport, a service of the application's group: on SIGTERM the
    /// server stops accepting, then calls in flight to the catalog drain.
    public let courier: CoordinatorService
    /// The catalog, as the routes' resources reach it.
    public let catalog: Catalog
    /// Where the coordinator's metrics go; `GET /metrics` shows it.
    public let registry: PrometheusCollectorRegistry
    let configuration: GatewayConfiguration

    /// - Parameters:
    ///   - tracer: the coordinator's tracer; nil uses the process-wide one (bootstrap an
    ///     exporter such as swift-otel's in `main`).
    ///   - registry: the Prometheus registry the coordinator's metrics go to.
    public init(
        configuration: GatewayConfiguration, tracer: (any Tracer)? = nil,
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), logger: Logger
    ) throws {
        var settings = CoordinatorService.Configuration()
        settings.coordinator.environment = configuration.catalogEnvironment
        settings.coordinator.cache = TieredCache(
            memory: .init(totalCost: 32 << 20),
            store: try configuration.cacheDirectory.map { try DiskCache(directory: $0) })
        // The gateway calls the catalog as itself: its bearer token names the gateway, not an
        // end user, so the cache need not be partitioned by it (a rotated token would
        // otherwise start an empty partition). Forward a user's credentials, and this must
        // go back to the default.
        settings.coordinator.credentialHeaders = []
        settings.coordinator.tracer = tracer
        settings.coordinator.metricsFactory = PrometheusMetricsFactory(registry: registry)
        // The catalog learns how long the gateway will wait (its request's deadline, below).
        settings.coordinator.deadlineField = .xDeadlineMs
        settings.drainTimeout = configuration.drainTimeout
        courier = CoordinatorService(configuration: settings, backgroundLogger: logger)
        let tokens = CatalogTokens(
            coordinator: courier.coordinator, tokenURL: configuration.tokenURL,
            clientID: configuration.clientID, clientSecret: configuration.clientSecret)
        catalog = Catalog(developmentURL: configuration.catalogDevelopmentURL, tokens: tokens)
        self.registry = registry
        self.configuration = configuration
    }

    /// The routes: `GET /health`, `GET /metrics`, `GET /products/{id}`, `GET /products?q=`.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: TracingMiddleware())
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: UpstreamErrorMiddleware())
        router.add(middleware: DeadlineMiddleware(limit: configuration.requestDeadline))
        let coordinator = courier.coordinator
        let catalog = catalog
        let registry = registry
        router.get("health") { _, _ in "ok" }
        router.get("metrics") { _, _ in registry.emitToString() }
        router.get("products/:id") { _, context -> EditedResponse<Product> in
            let id = try context.parameters.require("id", as: Int.self)
            let loaded = try await ProductService(id: id, catalog: catalog)
                .loadResponse(using: coordinator, logger: context.logger)
            return EditedResponse(headers: [.xCache: "\(loaded.source)"], response: loaded.value)
        }
        router.get("products") { request, context -> [Product] in
            let text = request.uri.queryParameters.get("q") ?? ""
            return try await ProductSearch(text: text, catalog: catalog).load(
                using: coordinator, logger: context.logger)
        }
        return router
    }

    /// The server, with the coordinator's service in its group.
    public func application(logger: Logger) -> some ApplicationProtocol {
        var application = Application(
            router: router(),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "gateway"),
            logger: logger)
        application.addServices(courier)
        return application
    }
}

extension Product: ResponseEncodable {}

extension HTTPField.Name {
    /// Where the gateway's answer came from: `network`, `memory`, `disk` or `revalidated`.
    public static let xCache = HTTPField.Name("X-Cache")!
}
