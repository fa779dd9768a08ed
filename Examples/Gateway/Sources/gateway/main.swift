import Foundation
import GatewayApp
import Hummingbird
import Logging
import Metrics
import Prometheus

// Logs to standard error; LOG_LEVEL=debug shows each request and each call to the catalog.
LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "gateway")
logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info

// Metrics: one Prometheus registry for the server's and Courier's metrics, at GET /metrics.
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
// Tracing: bootstrap your exporter here (swift-otel's `OTelTracer`, for example); Courier's
// client spans then join the server spans of Hummingbird's TracingMiddleware. Until then
// both are no-ops.

let configuration = GatewayConfiguration(environment: ProcessInfo.processInfo.environment)  // PORT, CATALOG_URL, ...
let gateway = try Gateway(configuration: configuration, registry: registry, logger: logger)
try await gateway.application(logger: logger).runService()  // SIGTERM/SIGINT: graceful shutdown
