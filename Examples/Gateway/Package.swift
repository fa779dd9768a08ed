// swift-tools-version: 6.2
import PackageDescription

// A gateway service on Hummingbird 2 that calls an upstream catalog through Courier. Its own
// package, like Benchmarks/, so that Courier's users never pull Hummingbird or Prometheus.
let package = Package(
    name: "CourierGateway",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
    ],
    targets: [
        .target(
            name: "GatewayApp",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierLifecycle", package: "Courier"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/GatewayApp",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "gateway",
            dependencies: ["GatewayApp"],
            path: "Sources/gateway",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "GatewayApp",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/GatewayTests",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
