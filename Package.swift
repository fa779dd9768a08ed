// swift-tools-version: 6.2
import PackageDescription

// CI sets COURIER_STRICT=1 so that our own targets treat every warning as an error,
// without imposing that on packages that depend on Courier.
let strict = Context.environment["COURIER_STRICT"] != nil

let swiftSettings: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ] + (strict ? [.treatAllWarnings(as: .error)] : [])

let package = Package(
    name: "Courier",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        .library(name: "CourierCore", targets: ["CourierCore"]),
        .library(name: "CourierTransport", targets: ["CourierTransport"]),
        .library(name: "CourierServices", targets: ["CourierServices"]),
        .library(name: "CourierCaching", targets: ["CourierCaching"]),
        .library(name: "CourierTesting", targets: ["CourierTesting"]),
        .library(name: "CourierJSON", targets: ["CourierJSON"]),
        // XML responses: a separate product, so that apps without XML never build XMLCoder.
        .library(name: "CourierXML", targets: ["CourierXML"]),
        // swift-service-lifecycle: a separate product, so that only apps that run a ServiceGroup
        // build it.
        .library(name: "CourierLifecycle", targets: ["CourierLifecycle"]),
        // Generated OpenAPI clients over a coordinator: a separate product, so that only apps
        // with generated clients build swift-openapi-runtime.
        .library(name: "CourierOpenAPI", targets: ["CourierOpenAPI"]),
        // A cache tier the fleet shares, on PostgreSQL. Its code (and postgres-nio, NIOSSL and
        // swift-crypto) builds only with the `PostgreSQL` trait: without it the product is empty.
        .library(name: "CourierPostgresCache", targets: ["CourierPostgresCache"]),
    ],
    traits: [
        .trait(
            name: "PostgreSQL",
            description: "Builds CourierPostgresCache's store on postgres-nio (off by default)."
        )
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/CoreOffice/XMLCoder.git", from: "0.18.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // The oldest versions checked here: InMemoryTracing (tests) and per-call metrics factories
        // need recent releases.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // `swift package generate-documentation`: a plugin, never linked into a product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // CourierPostgresCache only, and only with the `PostgreSQL` trait.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Test server only: never a dependency of a library product.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
    ],
    targets: [
        .target(
            name: "CCurl",
            path: "Sources/CCurl",
            linkerSettings: [.linkedLibrary("curl")]
        ),
        // CRC-32C for the disk cache's entry checksums (the CPU's CRC instruction when present).
        .target(
            name: "CChecksum",
            path: "Sources/CChecksum"
        ),
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // The brotli and zstd content codings' decoders (the test server's brotli encoder below).
        .systemLibrary(
            name: "CBrotli",
            path: "Sources/CBrotli",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            path: "Sources/CZstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // What every layer shares, with no curl and no zlib: errors, the transport seam, bodies,
        // options, metrics. A cache store or a test double needs nothing more.
        .target(
            name: "CourierCore",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Core",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierTransport",
            dependencies: [
                "CourierCore",
                "CCurl",
                "CZlib",
                "CBrotli",
                "CZstd",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transport",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierCaching",
            dependencies: [
                "CourierCore", "CChecksum",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Sources/Caching",
            swiftSettings: swiftSettings
        ),
        // The JSON decoder: no dependencies, so it can be used (and fuzzed) on its own.
        .target(
            name: "CourierJSON",
            path: "Sources/JSON",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierServices",
            dependencies: [
                "CourierCore", "CourierTransport", "CourierCaching", "CourierJSON",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Sources/Services",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierTesting",
            dependencies: ["CourierCore", "CourierServices"],
            path: "Sources/Testing",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierXML",
            dependencies: ["CourierServices", .product(name: "XMLCoder", package: "XMLCoder")],
            path: "Sources/XML",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierLifecycle",
            dependencies: [
                "CourierServices", "CourierTransport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Lifecycle",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierOpenAPI",
            dependencies: [
                "CourierServices",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/OpenAPI",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CourierPostgresCache",
            dependencies: [
                "CourierCaching", "CourierCore", "CChecksum",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/PostgresCache",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Courier",
            dependencies: ["CourierTransport", "CourierCaching", "CourierServices", "CourierJSON"],
            path: "Sources/Courier",
            swiftSettings: swiftSettings
        ),

        // Loopback HTTP server with fault injection, used by the tests and the demo.
        .target(
            name: "CourierTestServer",
            dependencies: [
                "CZlib", "CZstd", "CBrotliEncoder", "CourierCore", "CourierCaching",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/Support",
            // The h2c echo server H2EchoServer starts (Python, on python3-h2).
            exclude: ["h2-echo.py"],
            swiftSettings: swiftSettings
        ),
        .systemLibrary(
            name: "CBrotliEncoder",
            path: "Tests/CBrotliEncoder",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .executableTarget(
            name: "courier-demo",
            dependencies: ["Courier", "CourierTesting", "CourierTestServer"],
            path: "Examples/Demo",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "courier-fetch",
            dependencies: ["Courier"],
            path: "Examples/Fetch",
            swiftSettings: swiftSettings
        ),
        // A child process the transport's memory test measures.
        .executableTarget(
            name: "courier-memory-probe",
            dependencies: ["CourierTransport"],
            path: "Tests/MemoryProbe",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierTransportTests",
            dependencies: ["CourierTransport", "CourierTestServer", "courier-memory-probe"],
            path: "Tests/CourierTransportTests",
            swiftSettings: swiftSettings
        ),
        // A child process the disk cache tests kill mid-write.
        .executableTarget(
            name: "courier-cache-writer",
            dependencies: ["CourierCaching"],
            path: "Tests/CacheWriter",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierCachingTests",
            dependencies: ["CourierCaching", "CChecksum", "CourierTestServer", "courier-cache-writer"],
            path: "Tests/CourierCachingTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierTestingTests",
            dependencies: ["CourierTesting", "CourierTestServer"],
            path: "Tests/CourierTestingTests",
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierJSONTests",
            dependencies: ["CourierJSON", "CourierTestServer"],
            path: "Tests/CourierJSONTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierLifecycleTests",
            dependencies: [
                "CourierLifecycle", "CourierTestServer",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/CourierLifecycleTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierXMLTests",
            dependencies: ["CourierXML", "CourierTestServer"],
            path: "Tests/CourierXMLTests",
            swiftSettings: swiftSettings
        ),
        // A child process the coordinator's download memory test measures.
        .executableTarget(
            name: "courier-download-probe",
            dependencies: ["CourierServices"],
            path: "Tests/DownloadProbe",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CourierServicesTests",
            dependencies: [
                "CourierServices", "CourierTesting", "CourierTestServer", "courier-download-probe",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            path: "Tests/CourierServicesTests",
            swiftSettings: swiftSettings
        ),
        // One process of a fleet, for the PostgreSQL tier's fleet tests (`PostgreSQL` trait).
        .executableTarget(
            name: "courier-pg-fleet-member",
            dependencies: [
                "CourierServices", "CourierPostgresCache",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            ],
            path: "Tests/PostgresFleetMember",
            swiftSettings: swiftSettings
        ),
        // Starts its own PostgreSQL cluster; compiled only with the `PostgreSQL` trait.
        .testTarget(
            name: "CourierPostgresCacheTests",
            dependencies: [
                "CourierPostgresCache", "CourierServices", "CourierTestServer", "courier-pg-fleet-member",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/CourierPostgresCacheTests",
            swiftSettings: swiftSettings
        ),
        // A child process the OpenAPI transport's upload memory test measures.
        .executableTarget(
            name: "courier-upload-probe",
            dependencies: [
                "CourierOpenAPI", "CourierTestServer",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            path: "Tests/UploadProbe",
            swiftSettings: swiftSettings
        ),
        // The generated client (committed; scripts/generate-openapi-client.sh) over the loopback server.
        .testTarget(
            name: "CourierOpenAPITests",
            dependencies: [
                "CourierOpenAPI", "CourierTesting", "CourierTestServer", "courier-upload-probe",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/CourierOpenAPITests",
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"],
            swiftSettings: swiftSettings
        ),
    ]
)
